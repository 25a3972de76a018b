#!/usr/bin/env bash
# Makes one seeded golden folder with the shared hfref generator (../shared/hfref, see its README:
# unmodified transformers v4.57.6 on Debian's torch) plus this repository's patches, applied in
# order: tiny_b.patch (config B and its cases), seeded_weights.patch (every weight from
# seeded_weights.py's integer PRNG, described by the folder's seeded_weights.json),
# tiny_moe.patch (config M: Qwen3VLMoeForConditionalGeneration, router taps). Deterministic: the
# same files come out every time.
#   scripts/hfref/make_golden_folder.sh CONFIG TRANSFORMERS_SRC HF_HUB_SRC OUT
# CONFIG: B or M. TRANSFORMERS_SRC: `git archive v4.57.6 src/transformers` of
# huggingface/transformers, its src/; HF_HUB_SRC: `git archive v0.36.0 src/huggingface_hub` of
# huggingface/huggingface_hub, its src/.
# model.safetensors is generated data: the generator checks that seeded_weights.json regenerates
# it byte for byte, then it is deleted (the build regenerates it, tests/testdata/CMakeLists.txt).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WHICH=$1
TF_SRC=$(realpath "$2") HUB_SRC=$(realpath "$3")
OUT=$(realpath -m "$4")
SHARED=$(realpath "$ROOT/../shared")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cp -r "$SHARED/hfref" "$WORK/hfref"
chmod -R u+w "$WORK/hfref"
for p in tiny_b seeded_weights tiny_moe; do
  patch -s -d "$WORK/hfref" -p1 < "$HERE/$p.patch"
done
cp "$HERE/seeded_weights.py" "$WORK/hfref/"
mkdir -p "$WORK/assets"
cp "$SHARED"/hfref/assets/* "$SHARED"/testdata/qwen3-tokenizer/* "$WORK/assets/"
rm -rf "$OUT"
# One thread: torch's OpenMP workers spin badly on a busy machine, and the model is tiny.
OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 /usr/bin/python3 "$WORK/hfref/gen_qwen3vl_ref.py" --which "$WHICH" \
  --transformers-src "$TF_SRC" --hf-hub-src "$HUB_SRC" --assets "$WORK/assets" \
  --workdir "$WORK/rt-$WHICH" --out "$OUT" \
  --transformers-commit 753d61104116eefc8ffc977327b441ee0c8d599f
/usr/bin/python3 "$WORK/hfref/make_readme.py" "$OUT" "$WHICH" "$WORK/hfref/readme_common.md"
rm "$OUT/model.safetensors"
# The tokenizer is the shared one (as in qwen3vl-tiny-a): a one-line file naming it, which the
# loaders follow, instead of another copy of 11 MB.
REL=$(realpath --relative-to="$OUT" "$SHARED/testdata/qwen3-tokenizer/tokenizer.json")
cmp -s "$OUT/tokenizer.json" "$SHARED/testdata/qwen3-tokenizer/tokenizer.json"
printf '%s' "$REL" > "$OUT/tokenizer.json"
chmod -R u+w "$OUT"  # files copied from ../shared are read-only; the build copies these again
du -sh "$OUT"
