#!/usr/bin/env bash
# Regenerates tests/testdata/qwen3vl-tiny-b, the 8B-shaped golden folder (config B: a wider and
# deeper vision tower with inner DeepStack taps, an untied head, GQA ratio 4), with seeded weights
# (make_golden_folder.sh has the details).
#   scripts/hfref/make_tiny_b.sh TRANSFORMERS_SRC HF_HUB_SRC [OUT]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
exec "$HERE/make_golden_folder.sh" B "$1" "$2" "${3:-$HERE/../../tests/testdata/qwen3vl-tiny-b}"
