#!/usr/bin/env bash
# What benchmarks/peers.py needs besides layerpick's own venv, installed under WORK so that venv is left as it is.
#
# 1. fastembed, as an overlay on layerpick's venv: `pip install --target WORK/fastembed-site --no-deps fastembed`
#    plus its small pure dependencies. fastembed 0.9.1 pins huggingface-hub<2.0 while layerpick's venv has 2.x
#    (constraints.txt); installed with its dependencies it would downgrade the hub client under transformers 5.
#    The overlay lets peers.py time fastembed in the same process as every other row (its custom-model route reads
#    a local folder and never calls the hub client).
# 2. A venv of its own (WORK/st-onnx-venv) for sentence-transformers' ONNX export: `backend="onnx"` and
#    `export_dynamic_quantized_onnx_model` need optimum-onnx, whose only release (0.1.0) pins transformers<4.58, so
#    they cannot install beside layerpick (transformers 5). Even alone, `sentence-transformers[onnx]` of the 6.x line
#    cannot be satisfied (6.x requires transformers>=5): pip backtracks through old releases for many minutes. The
#    newest line that installs with its own `onnx` extra is 5.x; the set is pinned whole (left to resolve, pip spent
#    over 10 minutes backtracking here). peers.py runs `peers_st_onnx.py` in it to write the full models' ONNX
#    float32 and int8 graphs the way a sentence-transformers user makes them, then times those graph files with
#    onnxruntime in its own process.
# 3. all-mpnet-base-v2 (benchmarks/fetch_mpnet.sh).
#
#   WORK=/tmp/peers bash benchmarks/peers_setup.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
WORK="${WORK:?set WORK to a folder outside the repository}"
mkdir -p "$WORK"
PY="${PYTHON:-python3}"

if [ ! -d "$WORK/fastembed-site/fastembed" ]; then
    echo "== fastembed overlay in $WORK/fastembed-site" >&2
    .venv/bin/python -m pip install -q --no-deps --target "$WORK/fastembed-site" \
        fastembed==0.9.1 loguru==0.7.3 mmh3==5.3.1 py_rust_stemmers==0.1.8
fi

VENV="$WORK/st-onnx-venv"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import optimum.onnxruntime" 2>/dev/null; then
    echo "== sentence-transformers + optimum-onnx venv in $VENV" >&2
    "$PY" -m venv "$VENV"
    # torch first, pinned to the project's (the CPU wheel); then sentence-transformers' own `onnx` extra
    grep -E '^(torch|onnxruntime|numpy)==' "$ROOT/constraints.txt" > "$WORK/st-onnx-constraints.txt"
    "$VENV/bin/pip" install -q -c "$WORK/st-onnx-constraints.txt" torch
    "$VENV/bin/pip" install -q -c "$WORK/st-onnx-constraints.txt" "sentence-transformers[onnx]==5.7.0" \
        transformers==4.57.6 "optimum-onnx[onnxruntime]==0.1.0" optimum==2.1.0 huggingface_hub==0.36.2 \
        tokenizers==0.22.2
fi

bash benchmarks/fetch_mpnet.sh "$WORK/all-mpnet-base-v2" >/dev/null
echo "== ready: $WORK" >&2
