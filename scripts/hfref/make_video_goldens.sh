#!/usr/bin/env bash
# Regenerates tests/testdata/qwen3vl-tiny-a-video, the video golden cases, with transformers'
# own Qwen3-VL video processor and model (gen_video_ref.py) on the shared tiny model A, which it
# loads as it is: the folder holds the cases and names ../shared/testdata/qwen3vl-tiny-a for the
# model (no second copy of its weights). Deterministic: the same files come out every time.
#   scripts/hfref/make_video_goldens.sh TRANSFORMERS_SRC HF_HUB_SRC [OUT]
# TRANSFORMERS_SRC: `git archive v4.57.6 src/transformers` of huggingface/transformers, its src/;
# HF_HUB_SRC: `git archive v0.36.0 src/huggingface_hub` of huggingface/huggingface_hub, its src/.
# Needs Debian's python3-torch and python3-torchvision (../shared/hfref/README.md).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TF_SRC=$(realpath "$1") HUB_SRC=$(realpath "$2")
OUT=$(realpath -m "${3:-$ROOT/tests/testdata/qwen3vl-tiny-a-video}")
SHARED=$(realpath "$ROOT/../shared")
MODEL="$SHARED/testdata/qwen3vl-tiny-a"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

rm -rf "$OUT"
mkdir -p "$OUT"
# One thread: torch's OpenMP workers spin badly on a busy machine, and the model is tiny.
OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 /usr/bin/python3 "$HERE/gen_video_ref.py" \
  --hfref "$SHARED/hfref" --transformers-src "$TF_SRC" --hf-hub-src "$HUB_SRC" \
  --model "$MODEL" --tokenizer-json "$SHARED/testdata/qwen3-tokenizer/tokenizer.json" \
  --chat-template "$SHARED/hfref/assets/qwen3vl_instruct_chat_template.jinja" \
  --model-ref "$(realpath --relative-to="$OUT" "$MODEL")" \
  --workdir "$WORK/rt" --out "$OUT" \
  --transformers-commit 753d61104116eefc8ffc977327b441ee0c8d599f
du -sh "$OUT"
