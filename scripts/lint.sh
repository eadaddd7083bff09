#!/usr/bin/env bash
# The linter CI runs: ruff's formatter (check only) and its lint rules, as configured in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff format --check .
.venv/bin/ruff check .
