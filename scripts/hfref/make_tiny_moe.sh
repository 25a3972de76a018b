#!/usr/bin/env bash
# Regenerates tests/testdata/qwen3vl-tiny-moe, the mixture-of-experts golden folder (config M:
# Qwen3VLMoeForConditionalGeneration, 8 experts top-2, layer 2 dense; B's vision tower), with
# seeded weights (make_golden_folder.sh has the details).
#   scripts/hfref/make_tiny_moe.sh TRANSFORMERS_SRC HF_HUB_SRC [OUT]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
exec "$HERE/make_golden_folder.sh" M "$1" "$2" "${3:-$HERE/../../tests/testdata/qwen3vl-tiny-moe}"
