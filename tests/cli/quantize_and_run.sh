#!/usr/bin/env bash
# `qvl quantize` writes a pre-packed file; `qvl run -m FILE` answers exactly as `-m DIR --quant q4`
# (prompt ids, greedy tokens, text, with an image); bench loads it; mistakes are clear errors.
set -euo pipefail
QVL=$1 MODEL=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT"
"$QVL" --log-level warn quantize -m "$MODEL" -o "$OUT/m.qvl" --quant q4
[ -s "$OUT/m.qvl" ] && [ ! -e "$OUT/m.qvl.partial" ] || { echo "no output file"; exit 1; }
ask() {
  "$QVL" --log-level warn run "$@" --temperature 0 --max-tokens 12 --ignore-eos --json \
    --image "$MODEL/images/a_ii_shapes_200x120.png" "What is in this picture?" | tail -1
}
from_file=$(ask -m "$OUT/m.qvl")
from_dir=$(ask -m "$MODEL" --quant q4)
node -e '
const [a, b] = process.argv.slice(1).map(s => JSON.parse(s));
for (const k of ["prompt_ids", "completion_ids", "text"])
  if (JSON.stringify(a[k]) !== JSON.stringify(b[k])) throw new Error(k + " differs: " + a[k] + " vs " + b[k]);
if (!(a.usage.image_tokens > 0)) throw new Error("no image tokens");
' "$from_file" "$from_dir"
out=$("$QVL" --log-level warn bench -m "$OUT/m.qvl" --repeats 1 --prompt-tokens 32 --decode-tokens 4 \
      --skip-large-image --json | tail -1)
node -e 'const r = JSON.parse(process.argv[1]); if (!(r.load_ms > 0)) throw new Error(process.argv[1]);' "$out"

expect_error() {
  local pattern=$1; shift
  set +e; msg=$("$@" 2>&1); rc=$?; set -e
  if [ $rc -eq 0 ] || [ $rc -ge 128 ] || ! grep -q "$pattern" <<<"$msg"; then
    echo "expected error matching '$pattern' from: $* (rc=$rc): $msg"; exit 1
  fi
}
expect_error "pre-packed as q4" "$QVL" run -m "$OUT/m.qvl" --quant q8 "hi"
expect_error "exact needs the original weights" "$QVL" run -m "$OUT/m.qvl" --quant exact "hi"
expect_error "quantize reads a model folder" "$QVL" quantize -m "$OUT/m.qvl" -o "$OUT/x.qvl"
expect_error "exact" "$QVL" quantize -m "$MODEL" -o "$OUT/x.qvl" --quant exact
head -c 3000000 "$OUT/m.qvl" > "$OUT/trunc.qvl"
expect_error "truncated" "$QVL" run -m "$OUT/trunc.qvl" "hi"
expect_error "not a qvl pre-packed model file" "$QVL" run -m "$MODEL/model.safetensors" "hi"
[ ! -e "$OUT/x.qvl" ] || { echo "failed quantize left a file"; exit 1; }
echo OK
