#!/usr/bin/env bash
# The one-shot GPU check of issue 22, prepared to run as soon as a CUDA machine is lent (8 minutes or less on one
# GPU): the CUDA test subset (`pytest -m cuda`), select and validate of the installed packaged models on the CPU
# and with --device cuda in float16 and bfloat16 (same picks, scores within a stated tolerance), and several cuts
# benched in float16 at batch 1, 32 and 256; it writes benchmarks/results/gpu.md with the device name. The heavy
# steps are benchmarks/gpu_check.py. Without CUDA it prints "no CUDA device", writes nothing and exits 0.
#
#   bash scripts/setup.sh --no-run        # once, with a CUDA torch installed into .venv first
#   bash benchmarks/gpu_check.sh          # PYTHON=..., GPU_CHECK_DATA=../shared/data, GPU_CHECK_WORK=<tmp dir>
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-.venv/bin/python}"

cuda="$("$PY" -c 'import torch; print(int(torch.cuda.is_available()))')"
if [[ "$cuda" != 1 ]]; then
    echo "no CUDA device"
    exit 0
fi

DATA="${GPU_CHECK_DATA:-../shared/data}"
WORK="${GPU_CHECK_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/layerpick-gpu-check.XXXXXX")}"
mkdir -p "$WORK"
[[ -d "$DATA" ]] || { echo "gpu_check: task data not found at $DATA (set GPU_CHECK_DATA)" >&2; exit 1; }
started=$(date +%s)
echo "gpu_check: $("$PY" -c 'import torch; print(torch.cuda.get_device_name(0))'), work in $WORK"

echo "gpu_check: [1/4] pytest -m cuda"
tests_rc=0
timeout 150 "$PY" -m pytest -m cuda -q -p no:cacheprovider tests > "$WORK/tests.txt" 2>&1 || tests_rc=$?
tail -n 5 "$WORK/tests.txt"

echo "gpu_check: [2/4] select and validate on cpu/float32, cuda/float16, cuda/bfloat16"
timeout 240 "$PY" benchmarks/gpu_check.py picks --data "$DATA" --work "$WORK"

echo "gpu_check: [3/4] cuts benched in float16 at batch 1, 32, 256"
timeout 120 "$PY" benchmarks/gpu_check.py cuts --work "$WORK"

echo "gpu_check: [4/4] benchmarks/results/gpu.md"
"$PY" benchmarks/gpu_check.py report --work "$WORK" --output benchmarks/results/gpu.md \
    --seconds "$(( $(date +%s) - started ))"
if (( tests_rc != 0 )); then
    echo "gpu_check: the CUDA tests failed (exit $tests_rc); see $WORK/tests.txt" >&2
    exit "$tests_rc"
fi
