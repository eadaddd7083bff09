#!/usr/bin/env bash
# Do older sentence-transformers readers load a layerpick export, and get the same embeddings?
#
# Exports the packaged real models (and one tiny model per family) with the project's venv, then, for each
# version in VERSIONS, makes a separate venv under WORK (torch pinned from constraints.txt first: any other
# torch requirement would pull a multi-GB CUDA build), loads every export there and compares its embeddings
# with what the current sentence-transformers gives. Writes benchmarks/results/legacy_readers.md.
#
#   bash benchmarks/check_legacy_readers.sh            # WORK=/tmp/layerpick-legacy VERSIONS="2.7.0 3.4.1 5.1.2"
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
WORK="${WORK:-/tmp/layerpick-legacy}"
VERSIONS="${VERSIONS:-2.7.0 3.4.1 5.1.2}"
PYTHON="${PYTHON:-python3}"
RESULTS="$ROOT/benchmarks/results/legacy_readers.md"
mkdir -p "$WORK" "$(dirname "$RESULTS")"
rm -f "$WORK"/results-*.jsonl

echo "== exporting with $(.venv/bin/python -c 'import sentence_transformers as s; print("sentence-transformers", s.__version__)')"
HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/legacy_readers.py export "$WORK"

for version in $VERSIONS; do
    venv="$WORK/st-$version"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import sentence_transformers" 2>/dev/null; then
        echo "== installing sentence-transformers==$version into $venv"
        "$PYTHON" -m venv "$venv"
        "$venv/bin/pip" install -q -c "$ROOT/constraints.txt" torch==2.13.0
        "$venv/bin/pip" install -q -c "$ROOT/constraints.txt" "sentence-transformers==$version"
    fi
    echo "== reading with sentence-transformers $version"
    HF_HUB_OFFLINE=1 "$venv/bin/python" benchmarks/legacy_readers.py compare "$WORK" | tee "$WORK/results-$version.jsonl"
done

.venv/bin/python benchmarks/legacy_readers.py report "$WORK" > "$RESULTS"
echo "== wrote $RESULTS"
