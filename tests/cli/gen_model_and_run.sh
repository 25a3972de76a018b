#!/usr/bin/env bash
# gen-model writes a loadable HF-style folder; run answers from it; bad input gives clear errors.
set -euo pipefail
QVL=$1 TESTDATA=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT"
"$QVL" gen-model --preset tiny --tokenizer "$TESTDATA/qwen3vl-tiny-a" --out "$OUT/m" --seed 7
for f in config.json generation_config.json preprocessor_config.json model.safetensors \
         tokenizer.json tokenizer_config.json chat_template.json; do
  [ -s "$OUT/m/$f" ] || { echo "missing $f"; exit 1; }
done
json=$("$QVL" --log-level warn run -m "$OUT/m" --temperature 0 --max-tokens 5 --ignore-eos --json \
       --image "$TESTDATA/qwen3vl-tiny-a/images/a_ii_shapes_200x120.png" "What is this?" | tail -1)
node -e '
const r = JSON.parse(process.argv[1]);
if (r.completion_ids.length !== 5) throw new Error("expected 5 tokens: " + process.argv[1]);
if (!(r.usage.image_tokens > 0)) throw new Error("no image tokens");
if (r.prompt_ids.filter(t => t === 151655).length !== r.usage.image_tokens) throw new Error("pads");
' "$json"
# Same seed, same weights: generating again gives the same ids.
"$QVL" gen-model --preset tiny --tokenizer "$TESTDATA/qwen3vl-tiny-a" --out "$OUT/m2" --seed 7
cmp "$OUT/m/model.safetensors" "$OUT/m2/model.safetensors"
# Errors are one clear line and a non-zero exit, never a crash.
expect_error() {
  local pattern=$1; shift
  set +e; msg=$("$@" 2>&1); rc=$?; set -e
  if [ $rc -eq 0 ] || [ $rc -ge 128 ] || ! grep -q "$pattern" <<<"$msg"; then
    echo "expected error matching '$pattern' from: $* (rc=$rc): $msg"; exit 1
  fi
}
expect_error "not a model folder" "$QVL" run -m "$OUT" --offline "hi"
head -c 100000 "$OUT/m/model.safetensors" > "$OUT/trunc.safetensors"
cp -r "$OUT/m" "$OUT/broken" && cp "$OUT/trunc.safetensors" "$OUT/broken/model.safetensors"
expect_error "truncated" "$QVL" run -m "$OUT/broken" "hi"
expect_error "unsupported architecture" bash -c "sed 's/Qwen3VLForConditionalGeneration/LlamaForCausalLM/' '$OUT/m/config.json' > '$OUT/m2/config.json' && '$QVL' run -m '$OUT/m2' hi"
printf 'not an image' > "$OUT/bad.png"
expect_error "unknown image format\|supported" "$QVL" run -m "$OUT/m" --image "$OUT/bad.png" "hi"
expect_error "temperature" "$QVL" run -m "$OUT/m" --temperature -1 "hi"
echo '[{"role":"user","content":[{"type":"audio"}]}]' > "$OUT/conv.json"
expect_error "unknown content part" "$QVL" run -m "$OUT/m" --messages "$OUT/conv.json"
echo '[{"role":"user","content":[{"type":"video"}]}]' > "$OUT/conv.json"
expect_error "video part without 'video'" "$QVL" run -m "$OUT/m" --messages "$OUT/conv.json"
echo '{not json' > "$OUT/conv.json"
expect_error "not valid JSON" "$QVL" run -m "$OUT/m" --messages "$OUT/conv.json"
echo OK
