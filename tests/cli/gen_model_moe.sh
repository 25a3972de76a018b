#!/usr/bin/env bash
# A mixture of experts end to end: gen-model's tiny-moe folder (experts fused, as transformers
# saves them) runs in every weight type with an image, and `gen-model --quant` writes the very file
# `qvl quantize` makes from that folder (experts generated one matrix at a time), which answers as
# the folder does.
set -euo pipefail
QVL=$1 TESTDATA=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT"
"$QVL" gen-model --preset tiny-moe --tokenizer "$TESTDATA/qwen3vl-tiny-a" --out "$OUT/m" --seed 5
grep -q '"Qwen3VLMoeForConditionalGeneration"' "$OUT/m/config.json"
image="$TESTDATA/qwen3vl-tiny-a/images/a_ii_shapes_200x120.png"
ids() {  # completion ids of a greedy run
  "$QVL" --log-level warn run "$@" --temperature 0 --max-tokens 8 --ignore-eos --json \
    --image "$image" "What is this?" | tail -1 |
    node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
             if (!(r.usage.image_tokens > 0)) throw new Error("no image tokens");
             console.log(r.completion_ids.join(","))'
}
for quant in exact bf16 q8 q4; do
  got=$(ids -m "$OUT/m" --quant "$quant")
  [ "$(tr ',' '\n' <<<"$got" | wc -l)" = 8 ] || { echo "$quant: $got"; exit 1; }
done
"$QVL" --log-level warn quantize -m "$OUT/m" --quant q4 --out "$OUT/folder.qvl"
"$QVL" --log-level warn gen-model --preset tiny-moe --tokenizer "$TESTDATA/qwen3vl-tiny-a" \
  --seed 5 --quant q4 --out "$OUT/direct.qvl"
cmp "$OUT/folder.qvl" "$OUT/direct.qvl"
[ ! -e "$OUT/direct.qvl.files" ] || { echo "the staging folder was left behind"; exit 1; }
[ "$(ids -m "$OUT/direct.qvl")" = "$(ids -m "$OUT/m" --quant q4)" ]
echo OK
