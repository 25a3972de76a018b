#!/usr/bin/env bash
# Makes GGUF pairs of a tiny golden model with llama.cpp's own converter (convert_hf_to_gguf.py,
# --mmproj for the vision projector), for the GGUF tests that read real converter output
# (tests/parity/gguf_parity_test.cpp, GgufConverterParity). llama.cpp's source comes from the git
# bundle inside the npm package node-llama-cpp (never vendored), unpacked once under the cache
# folder; Python is Debian's with python3-numpy, -torch, -tqdm and -sentencepiece (Debian has no
# transformers: scripts/gguf_fixtures/ holds the two pieces of it the converter needs).
#
# Usage: scripts/make_gguf_fixtures.sh [model-folder] [out-folder] [cache-folder]
#   defaults: ../shared/testdata/qwen3vl-tiny-a, build/gguf-fixtures, build/gguf-tools
# Writes <out>/{f16,bf16,q8_0}/{model,mmproj}.gguf, <out>/q4_k_m/{model,mmproj}.gguf (the F16
# model through llama.cpp's llama-quantize, built once in the cache; rows narrower than 256 get
# its fallback types; the mmproj stays F16 as in Qwen's releases) and <out>/llama.cpp-version.
# QVL_GGUF_NO_QUANTIZE=1 skips the llama-quantize build and the q4_k_m pair.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
MODEL="$(realpath "${1:-../shared/testdata/qwen3vl-tiny-a}")"
OUT="$(realpath -m "${2:-build/gguf-fixtures}")"
CACHE="$(realpath -m "${3:-build/gguf-tools}")"
NODE_LLAMA_CPP_VERSION="3.22.1"  # its llama/gitRelease.bundle is the llama.cpp source used

for p in python3-numpy python3-torch python3-tqdm python3-sentencepiece; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || {
    echo "make_gguf_fixtures: needs the Debian package $p (apt-get install $p)" >&2
    exit 2
  }
done

# llama.cpp source, once.
SRC="$CACHE/llama.cpp"
if [ ! -f "$SRC/convert_hf_to_gguf.py" ]; then
  mkdir -p "$CACHE"
  (cd "$CACHE" && npm pack --silent "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" >/dev/null)
  tar -xzf "$CACHE/node-llama-cpp-$NODE_LLAMA_CPP_VERSION.tgz" -C "$CACHE" \
    package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
  rm -rf "$SRC"
  git clone --quiet "$CACHE/package/llama/gitRelease.bundle" "$SRC"
fi

# The model folder as the converter reads it: tokenizer.json resolved (the tiny folders link it).
WORK="$CACHE/model"
rm -rf "$WORK" && mkdir -p "$WORK"
for f in "$MODEL"/*.json "$MODEL"/*.safetensors; do
  cp "$(realpath "$f")" "$WORK/$(basename "$f")"
done
tok="$MODEL/tokenizer.json"
if [ "$(head -c 1 "$tok")" != "{" ]; then tok="$MODEL/$(tr -d '\r\n' <"$tok")"; fi
cp "$(realpath "$tok")" "$WORK/tokenizer.json"
rm -f "$WORK/manifest.json" "$WORK"/crosscheck_*.json

export PYTHONPATH="$ROOT/scripts/gguf_fixtures:$SRC/gguf-py"
export QVL_REFERENCE_ENCODE="$ROOT/tests/tokenizer/reference_encode.js"
convert() {  # outtype, output file, extra flags
  /usr/bin/python3 "$SRC/convert_hf_to_gguf.py" "$WORK" --outtype "$1" --outfile "$2" "${@:3}" \
    >"$2.log" 2>&1 || { tail -20 "$2.log" >&2; exit 1; }
}
for type in f16 bf16 q8_0; do
  mkdir -p "$OUT/$type"
  convert "$type" "$OUT/$type/model.gguf"
  convert "$type" "$OUT/$type/mmproj.gguf" --mmproj
done
if [ "${QVL_GGUF_NO_QUANTIZE:-0}" != 1 ]; then
  if [ ! -x "$SRC/build/bin/llama-quantize" ]; then
    cmake -S "$SRC" -B "$SRC/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
      -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
      -DGGML_OPENMP=OFF >"$CACHE/llama-quantize-build.log" 2>&1
    cmake --build "$SRC/build" --target llama-quantize >>"$CACHE/llama-quantize-build.log" 2>&1 ||
      { tail -20 "$CACHE/llama-quantize-build.log" >&2; exit 1; }
  fi
  mkdir -p "$OUT/q4_k_m"
  "$SRC/build/bin/llama-quantize" "$OUT/f16/model.gguf" "$OUT/q4_k_m/model.gguf" Q4_K_M \
    >"$OUT/q4_k_m/model.gguf.log" 2>&1 || { tail -20 "$OUT/q4_k_m/model.gguf.log" >&2; exit 1; }
  cp "$OUT/f16/mmproj.gguf" "$OUT/q4_k_m/mmproj.gguf"
fi
git -C "$SRC" log -1 --format='llama.cpp %H (from node-llama-cpp '"$NODE_LLAMA_CPP_VERSION"')' \
  >"$OUT/llama.cpp-version"
cat "$SRC/../package/llama/llama.cpp.info.json" >>"$OUT/llama.cpp-version" 2>/dev/null || true
echo "GGUF fixtures in $OUT"
