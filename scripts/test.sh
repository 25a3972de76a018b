#!/usr/bin/env bash
# Runs every test: sets up and builds (scripts/setup.sh), then ctest.
# Extra arguments go to ctest, e.g. scripts/test.sh -R parity
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${QVL_BUILD_DIR:-build}"
scripts/setup.sh "$BUILD_DIR"
echo "=== scripts/test.sh: set up and built at ${SECONDS} s; the x86 suite"
ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 900 -j "$(nproc)" "$@"
# qvl on aarch64, cross-built and run under qemu (scripts/test_cross.sh says what runs under
# which CPU model): the kernels at every ARM level, the tokenizer, image and model layers, the
# parity and quality tests, and qvl run/serve/--isa. Not when ctest arguments narrow the run, nor
# with QVL_CROSS=0.
if [ $# -eq 0 ] && [ "${QVL_CROSS:-1}" != 0 ]; then
  echo "=== scripts/test.sh: x86 suite done at ${SECONDS} s; aarch64 under qemu"
  QVL_CROSS_TARGETS="${QVL_CROSS_TARGETS:-test_ops test_tokenizer test_image test_model test_parity qvl}" \
    scripts/test_cross.sh aarch64
  echo "=== scripts/test.sh: aarch64 done at ${SECONDS} s"
fi
