#!/usr/bin/env bash
# Runs every test: sets up and builds (scripts/setup.sh), then ctest.
# Extra arguments go to ctest, e.g. scripts/test.sh -R parity
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${QVL_BUILD_DIR:-build}"
scripts/setup.sh "$BUILD_DIR"
ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 900 -j "$(nproc)" "$@"
