#!/usr/bin/env bash
# Regenerates tests/testdata/qwen3vl-tiny-b, the 8B-shaped golden folder, with the shared hfref
# generator (../shared/hfref, see its README: unmodified transformers v4.57.6 on Debian's torch)
# plus config B and its cases (tiny_b.patch). Deterministic: the same files come out every time.
#   scripts/hfref/make_tiny_b.sh TRANSFORMERS_SRC HF_HUB_SRC [OUT]
# TRANSFORMERS_SRC: `git archive v4.57.6 src/transformers` of huggingface/transformers, its src/;
# HF_HUB_SRC: `git archive v0.36.0 src/huggingface_hub` of huggingface/huggingface_hub, its src/.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TF_SRC=$(realpath "$1") HUB_SRC=$(realpath "$2")
OUT=$(realpath -m "${3:-$ROOT/tests/testdata/qwen3vl-tiny-b}")
SHARED=$(realpath "$ROOT/../shared")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cp -r "$SHARED/hfref" "$WORK/hfref"
chmod -R u+w "$WORK/hfref"
patch -d "$WORK/hfref" -p1 < "$HERE/tiny_b.patch"
mkdir -p "$WORK/assets"
cp "$SHARED"/hfref/assets/* "$SHARED"/testdata/qwen3-tokenizer/* "$WORK/assets/"
rm -rf "$OUT"
# One thread: torch's OpenMP workers spin badly on a busy machine, and the model is tiny.
OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 /usr/bin/python3 "$WORK/hfref/gen_qwen3vl_ref.py" --which B \
  --transformers-src "$TF_SRC" --hf-hub-src "$HUB_SRC" --assets "$WORK/assets" \
  --workdir "$WORK/rt-B" --out "$OUT" \
  --transformers-commit 753d61104116eefc8ffc977327b441ee0c8d599f
/usr/bin/python3 "$WORK/hfref/make_readme.py" "$OUT" B "$WORK/hfref/readme_common.md"
# The tokenizer is the shared one (as in qwen3vl-tiny-a): a one-line file naming it, which the
# loaders follow, instead of a third copy of 11 MB.
REL=$(realpath --relative-to="$OUT" "$SHARED/testdata/qwen3-tokenizer/tokenizer.json")
cmp -s "$OUT/tokenizer.json" "$SHARED/testdata/qwen3-tokenizer/tokenizer.json"
printf '%s' "$REL" > "$OUT/tokenizer.json"
du -sh "$OUT"
