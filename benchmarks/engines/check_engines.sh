#!/usr/bin/env bash
# Do real serving engines give a layerpick export's vectors?
#
# Exports smollm2-135m (layer 28; layer 29 with --prompt eol) and minilm-l6 (layer 4) with --format onnx
# --quantize int8 using the project's venv, makes a separate venv under WORK with infinity-emb 0.0.78 (torch pinned from constraints.txt FIRST: any
# other torch requirement would pull a multi-GB CUDA build; infinity pins sentence-transformers<4 and numpy<2,
# and sentence-transformers' ONNX backend needs optimum, which pins transformers below 5), serves each export
# with infinity over HTTP and loads it with sentence-transformers' backend="onnx", and compares the vectors
# with the project's sentence-transformers. Writes benchmarks/results/engines.md.
#
#   bash benchmarks/engines/check_engines.sh        # WORK=/tmp/layerpick-engines, PROJECT_PYTHON=.venv/bin/python
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$(pwd)"
WORK="${WORK:-/tmp/layerpick-engines}"
PYTHON="${PYTHON:-python3}"
PROJECT_PYTHON="${PROJECT_PYTHON:-.venv/bin/python}"
RESULTS="${RESULTS:-$ROOT/benchmarks/results/engines.md}"  # ENGINES_ONLY=a,b (a subset) writes where RESULTS says
VENV="$WORK/venv"
mkdir -p "$WORK"

echo "== exporting with the project's environment (exports already in WORK are kept)"
PYTHONPATH="$ROOT" HF_HUB_OFFLINE=1 "$PROJECT_PYTHON" benchmarks/engines/engines.py export "$WORK"

if [ ! -x "$VENV/bin/infinity_emb" ]; then
    echo "== installing infinity-emb 0.0.78 into $VENV"
    "$PYTHON" -m venv "$VENV"
    # torch alone is pinned: constraints.txt pins the project's whole environment (sentence-transformers 6,
    # numpy 2), which infinity's pins contradict, so pip would find no solution
    grep '^torch==' "$ROOT/constraints.txt" > "$WORK/torch-constraint.txt"
    "$VENV/bin/pip" install -q -c "$WORK/torch-constraint.txt" torch==2.13.0
    # pip resolves optimum 2 with optimum-onnx here. infinity's optimum (ONNX) engine then cannot open a local
    # directory (it passes the graph's absolute path as `file_name`, optimum-onnx matches bare file names),
    # and optimum 1.x, which would, does not import with torch 2.13: those rows fail, with the reason.
    "$VENV/bin/pip" install -q -c "$WORK/torch-constraint.txt" "infinity-emb[server,torch,optimum]==0.0.78"
fi

echo "== serving with infinity and loading with sentence-transformers' ONNX backend"
HF_HUB_OFFLINE=1 "$VENV/bin/python" benchmarks/engines/engines.py compare "$WORK" | tee "$WORK/results.jsonl"

PYTHONPATH="$ROOT" "$PROJECT_PYTHON" benchmarks/engines/engines.py report "$WORK" > "$RESULTS"
echo "== wrote $RESULTS"
