#!/usr/bin/env bash
# A model whose widths are not multiples of 32 (text 80/112, vision 48/72) loads in every weight
# type, folder and pre-packed, says once which matrices stay exact, and answers like exact within
# each type's tolerance (it used to fail: "bf16 needs columns in multiples of 32").
set -euo pipefail
QVL=$1 TOKENIZER=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT"
"$QVL" --log-level warn gen-model --preset tiny-odd --tokenizer "$TOKENIZER" --out "$OUT/odd"
IMAGE="$TOKENIZER/images/a_ii_shapes_200x120.png"
report=$("$QVL" --log-level warn quality -m "$OUT/odd" --quant exact,bf16,q8,q4 --tokens 6 --json |
         tail -1)
node -e '
const r = JSON.parse(process.argv[1]);
const bound = {exact: [0, 1], bf16: [1e-5, 1], q8: [1e-4, 1], q4: [2e-3, 0.9]};
for (const t of r.types) {
  const [kl, top1] = bound[t.quant];
  if (!(t.total.positions > 0 && t.total.mean_kl <= kl && t.total.top1_agreement >= top1))
    throw new Error(t.quant + " too far from exact: " + JSON.stringify(t.total));
}
if (r.types.length !== 4) throw new Error("types: " + process.argv[1]);
' "$report"
ask() {
  "$QVL" run "$@" --temperature 0 --max-tokens 8 --ignore-eos --json --image "$IMAGE" "Describe."
}
for q in bf16 q8 q4; do
  from_dir=$(ask -m "$OUT/odd" --quant $q 2>"$OUT/log_$q" | tail -1)
  grep -q "not a multiple of 32 .* stay exact" "$OUT/log_$q" || {
    echo "no info line for $q:"; cat "$OUT/log_$q"; exit 1; }
  [ "$(grep -c 'stay exact' "$OUT/log_$q")" -eq 1 ] || { echo "more than one info line"; exit 1; }
  "$QVL" --log-level warn quantize -m "$OUT/odd" -o "$OUT/odd-$q.qvl" --quant $q
  from_file=$(ask -m "$OUT/odd-$q.qvl" 2>/dev/null | tail -1)
  node -e '
const [a, b] = process.argv.slice(1, 3).map(s => JSON.parse(s));
for (const k of ["prompt_ids", "completion_ids", "text"])
  if (JSON.stringify(a[k]) !== JSON.stringify(b[k])) throw new Error(process.argv[3] + " " + k);
if (!(a.usage.image_tokens > 0)) throw new Error("no image tokens");
' "$from_dir" "$from_file" "$q"
done
echo "odd widths: every type loads and follows exact"
