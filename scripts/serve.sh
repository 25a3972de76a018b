#!/usr/bin/env bash
# Sets up and builds qvl (scripts/setup.sh), then serves a model over HTTP.
# Usage: scripts/serve.sh [MODEL] [qvl serve flags...]
#   MODEL: a Hugging Face model folder, or a hub id such as Qwen/Qwen3-VL-2B-Instruct
#          (default: the shared tiny test model when present, else Qwen/Qwen3-VL-2B-Instruct).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build >&2
MODEL="${1:-}"
[ $# -gt 0 ] && shift
if [ -z "$MODEL" ]; then
  if [ -d ../shared/testdata/qwen3vl-tiny-a ]; then
    MODEL=../shared/testdata/qwen3vl-tiny-a
  else
    MODEL=Qwen/Qwen3-VL-2B-Instruct
  fi
fi
exec build/qvl serve -m "$MODEL" "$@"
