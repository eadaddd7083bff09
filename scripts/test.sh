#!/usr/bin/env bash
# Run layerpick's test suite (unit + integration on the packaged real models).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -q "$@"
