#!/usr/bin/env bash
# Sets up and builds qvl (scripts/setup.sh), then serves a model over HTTP.
# Usage: scripts/serve.sh [MODEL] [qvl serve flags...]
#   MODEL: a Hugging Face model folder, or a hub id (default Qwen/Qwen3-VL-2B-Instruct, pulled
#          into the Hugging Face cache on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build >&2
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  MODEL=$1
  shift
  exec build/qvl serve -m "$MODEL" "$@"
fi
exec build/qvl serve "$@"
