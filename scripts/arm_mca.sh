#!/usr/bin/env bash
# Regenerates docs/arm-mca.md: llvm-mca figures of qvl's aarch64 inner loops (int8 GEMM tiles,
# decode GEMV, the fp32 GEMM tile and bf16 GEMV, attention, elementwise) on Neoverse-N1
# (= Cortex-A76), N2, V1, V2 and Apple core models (the plain-NEON SMULL tile also on the
# Cortex-A53, A55, A72 and A64FX models), beside the inner loops of llama.cpp's
# ggml-cpu ARM kernels for the same jobs. Static analysis without ARM hardware: each source file
# is compiled to assembly with Debian's aarch64-linux-gnu-g++ as the build compiles it, the loop
# is found in the assembly (by function name and control flow, scripts/arm_mca_loops.py) and
# timed by llvm-mca-19.
#
# Usage: scripts/arm_mca.sh [--llama-src DIR | --no-llama] [--out FILE] [--work DIR] [--dump DIR]
#   --llama-src DIR  a llama.cpp source tree (default: $LLAMA_CPP_SRC, else the llama.cpp that the
#                    npm package node-llama-cpp bundles, see below)
#   --no-llama       our loops only
#   --out FILE       the report (default: docs/arm-mca.md)
#   --work DIR       keep the assembly there (default: a temporary folder, removed at the end)
#   --dump DIR       write each loop's llvm-mca input (the extracted loop body) into DIR
# Environment:
#   LLAMA_CPP_SRC           as --llama-src
#   NODE_LLAMA_CPP_VERSION  the node-llama-cpp release whose llama.cpp is measured (default 3.22.1;
#                           pinned so that the report is reproducible)
#
# llama.cpp's source: node-llama-cpp ships the llama.cpp release it builds from as a git bundle
# (package/llama/gitRelease.bundle, release tag in package/llama/llama.cpp.info.json). The script
# runs `npm pack node-llama-cpp@VERSION` in a temporary folder and clones that bundle into
# /tmp/qvl-arm-mca/llama.cpp-VERSION (reused by later runs). Nothing of it enters the repository.
# Any other llama.cpp checkout works with --llama-src (e.g. a clone of the ggml-org/llama.cpp
# repository at the tag wanted).
#
# Installs what is missing first (Debian packages, idempotent, like scripts/test_cross.sh):
# g++-aarch64-linux-gnu, gcc-aarch64-linux-gnu (cross compilers, GCC 12 on bookworm), llvm-19
# (llvm-mca-19, llvm-mc-19: bookworm's main archive), python3, git; npm for the llama.cpp source.
# Runs in about a minute and a half on 2 cores (14 small compiles, ~250 llvm-mca runs); the same
# sources, compiler and LLVM give the same report.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

LLAMA_SRC=${LLAMA_CPP_SRC:-}
NO_LLAMA=0
OUT=docs/arm-mca.md
WORK=""
DUMP=""
NODE_LLAMA_CPP_VERSION=${NODE_LLAMA_CPP_VERSION:-3.22.1}
while (($#)); do
  case "$1" in
    --llama-src) LLAMA_SRC=$(cd "$2" && pwd); shift 2 ;;
    --no-llama) NO_LLAMA=1; shift ;;
    --out) OUT=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --dump) DUMP=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "arm_mca: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
APT_UPDATED=0
apt_install() {  # apt_install PKG... : installs those not installed yet
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "arm_mca: installing ${missing[*]}"
  if ((!APT_UPDATED)); then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    APT_UPDATED=1
  fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
apt_install g++-aarch64-linux-gnu gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu llvm-19 python3 git

TMP=$(mktemp -d /tmp/qvl-arm-mca.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
[ -n "$WORK" ] || WORK=$TMP/asm
mkdir -p "$WORK"

# llama.cpp's source and a label for the report.
LLAMA_LABEL=""
if ((!NO_LLAMA)); then
  if [ -z "$LLAMA_SRC" ]; then
    command -v npm >/dev/null || apt_install npm
    CACHE=/tmp/qvl-arm-mca/llama.cpp-$NODE_LLAMA_CPP_VERSION
    if [ ! -f "$CACHE/ggml/src/ggml-cpu/arch/arm/repack.cpp" ] || [ ! -f "$CACHE.info.json" ]; then
      echo "arm_mca: fetching node-llama-cpp@$NODE_LLAMA_CPP_VERSION (npm pack) for its llama.cpp"
      mkdir -p "$TMP/npm" /tmp/qvl-arm-mca
      (cd "$TMP/npm" && npm pack --silent "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" >/dev/null)
      tar -xzf "$TMP"/npm/node-llama-cpp-*.tgz -C "$TMP/npm" package/llama/gitRelease.bundle \
        package/llama/llama.cpp.info.json
      rm -rf "$CACHE"
      git clone -q "$TMP/npm/package/llama/gitRelease.bundle" "$CACHE" 2>/dev/null
      cp "$TMP/npm/package/llama/llama.cpp.info.json" "$CACHE.info.json"
    fi
    LLAMA_SRC=$CACHE
    tag=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("tag","?"))' "$CACHE.info.json")
    LLAMA_LABEL="the llama.cpp bundled in npm node-llama-cpp@$NODE_LLAMA_CPP_VERSION (its llama.cpp.info.json: release \`$tag\`)"
  else
    LLAMA_LABEL="the source tree given with --llama-src / LLAMA_CPP_SRC"
  fi
  [ -f "$LLAMA_SRC/ggml/src/ggml-cpu/arch/arm/repack.cpp" ] ||
    { echo "arm_mca: $LLAMA_SRC is not a llama.cpp tree (no ggml/src/ggml-cpu/arch/arm/repack.cpp)" >&2; exit 1; }
  if git -C "$LLAMA_SRC" rev-parse HEAD >/dev/null 2>&1; then
    LLAMA_LABEL="$LLAMA_LABEL, commit \`$(git -C "$LLAMA_SRC" rev-parse --short=12 HEAD)\` of $(git -C "$LLAMA_SRC" log -1 --format=%cs)"
  fi
  ggml=$(sed -n 's/^set(GGML_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))/\2/p' "$LLAMA_SRC/ggml/CMakeLists.txt" | paste -sd.)
  [ -n "$ggml" ] && LLAMA_LABEL="$LLAMA_LABEL, ggml $ggml"
fi

args=(--root "$ROOT" --work "$WORK" --out "$OUT" --command "scripts/arm_mca.sh")
((NO_LLAMA)) || args+=(--llama-src "$LLAMA_SRC" --llama-label "$LLAMA_LABEL")
[ -z "$DUMP" ] || args+=(--dump "$DUMP")
python3 scripts/arm_mca_loops.py "${args[@]}"
echo "arm_mca: wrote $OUT"
