#!/usr/bin/env bash
# Do transformers 4.x readers (what vLLM and infinity deployments commonly run) apply a prompted export's
# template by themselves? Exports tiny models of every family (and, with REAL=1, the packaged real models)
# with the project's venv, then loads their tokenizers in a separate venv holding only transformers 4.x
# (no torch needed to tokenize). Writes benchmarks/results/prompt_readers.md.
#
#   bash benchmarks/prompt_readers.sh          # WORK=/tmp/layerpick-prompt-readers TRANSFORMERS=4.57.6 REAL=1
set -euo pipefail
cd "$(dirname "$0")/.."
WORK="${WORK:-/tmp/layerpick-prompt-readers}"
TRANSFORMERS="${TRANSFORMERS:-4.57.6}"
PYTHON="${PYTHON:-python3}"
VENV_PYTHON="${VENV_PYTHON:-.venv/bin/python}"
RESULTS="benchmarks/results/prompt_readers.md"
mkdir -p "$WORK"

echo "== exporting with the project's venv"
HF_HUB_OFFLINE=1 "$VENV_PYTHON" benchmarks/prompt_readers.py export "$WORK" ${REAL:+--real}

venv="$WORK/transformers-$TRANSFORMERS"
if [ ! -x "$venv/bin/python" ]; then
    "$PYTHON" -m venv "$venv"
    "$venv/bin/pip" install -q "transformers==$TRANSFORMERS"
fi
echo "== reading with transformers $TRANSFORMERS"
HF_HUB_OFFLINE=1 "$venv/bin/python" benchmarks/prompt_readers.py check "$WORK"

{
    echo "# Tokenizer readers of a prompted export"
    echo
    echo "Made by \`REAL=${REAL:-} bash benchmarks/prompt_readers.sh\` on $(date -u +%Y-%m-%d): exports written with"
    echo "$("$VENV_PYTHON" -c 'import transformers, sentence_transformers as s; print(f"transformers {transformers.__version__} and sentence-transformers {s.__version__}")'),"
    echo "template \`eol\`; texts: two short sentences and one of 15,000 characters (truncated at the export's"
    echo "max_seq_length, so \"suffix kept\" means its last tokens are the template's). Rows \"with tokenizer_class X\""
    echo "put the source model's own tokenizer class back into tokenizer_config.json: where that class rebuilds the"
    echo "post-processor from its own settings on load, the template is gone (**no**), which is why a prompted"
    echo "export names the generic \`PreTrainedTokenizerFast\`, the one class every version loads tokenizer.json with as it is."
    echo
    "$VENV_PYTHON" benchmarks/prompt_readers.py report "$WORK"
} > "$RESULTS"
echo "== wrote $RESULTS"
