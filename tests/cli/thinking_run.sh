#!/usr/bin/env bash
# `qvl run` with a Thinking model (the tiny model with the Qwen3-VL-*-Thinking chat template):
# the reasoning is hidden unless --show-reasoning (then before the answer, dimmed only on a
# terminal); --json's "text" is the answer and "reasoning" the reasoning, also from a pre-packed
# file of the model, and from qvl batch; Instruct output keeps no "reasoning" key. A JSON schema with a small --max-tokens makes the engine close the random
# model's reasoning in time for the answer, so there is an answer to split off.
set -euo pipefail
QVL=$1 MODEL=$2 OUT=$3 SRC=$4
rm -rf "$OUT" && mkdir -p "$OUT/think"
for f in "$MODEL"/*; do
  name=$(basename "$f")
  [[ $name == chat_template.json || $name == tokenizer.json ]] || ln -s "$(realpath "$f")" "$OUT/think/$name"
done
tokenizer=$(head -c 1024 "$MODEL/tokenizer.json")
if [[ ${tokenizer:0:1} == "{" ]]; then
  ln -s "$(realpath "$MODEL/tokenizer.json")" "$OUT/think/tokenizer.json"
else
  realpath "$MODEL/$tokenizer" > "$OUT/think/tokenizer.json"
fi
node -e 'const fs = require("fs"); fs.writeFileSync(process.argv[2],
  JSON.stringify({chat_template: fs.readFileSync(process.argv[1], "utf8")}))' \
  "$SRC/tests/tokenizer/qwen3vl_thinking_chat_template.jinja" "$OUT/think/chat_template.json"
cat > "$OUT/schema.json" <<'JSON'
{"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}},
 "required": ["city"], "additionalProperties": false}
JSON
run() { "$QVL" --log-level warn run -m "$OUT/think" --json-schema "$OUT/schema.json" \
  --temperature 1 --seed 3 --max-tokens 30 "$@" "Which city?"; }
run --json > "$OUT/run.json"
run > "$OUT/plain.txt" 2> /dev/null
run --show-reasoning > "$OUT/shown.txt" 2> /dev/null
"$QVL" --log-level warn run -m "$MODEL" --temperature 0 --max-tokens 3 --json "Hi" > "$OUT/instruct.json"
# qvl batch: the answer apart from its reasoning.
node -e 'const fs = require("fs"); const schema = JSON.parse(fs.readFileSync(process.argv[1]));
  fs.writeFileSync(process.argv[2], JSON.stringify({id: "a", body: {messages: [{role: "user",
    content: "Which city?"}], max_tokens: 30, temperature: 1, seed: 3, response_format: {
    type: "json_schema", json_schema: {name: "city", schema}}}}) + "\n")' \
  "$OUT/schema.json" "$OUT/requests.jsonl"
"$QVL" --log-level warn batch -m "$OUT/think" --requests "$OUT/requests.jsonl" \
  -o "$OUT/batch.jsonl" > /dev/null 2>&1
# A pre-packed file keeps the template, so the variant too.
"$QVL" --log-level warn quantize -m "$OUT/think" -o "$OUT/think.qvl" --quant q8 > /dev/null
"$QVL" --log-level warn run -m "$OUT/think.qvl" --json-schema "$OUT/schema.json" --temperature 1 \
  --seed 3 --max-tokens 30 --json "Which city?" > "$OUT/packed.json"
if command -v script > /dev/null; then
  SHELL=/bin/bash script -qec "$(printf '%q ' "$QVL" --log-level warn run -m "$OUT/think" \
    --json-schema "$OUT/schema.json" --temperature 1 --seed 3 --max-tokens 30 --show-reasoning \
    "Which city?")" \
    /dev/null > "$OUT/tty.txt" 2> /dev/null
else
  echo "no 'script' command: the terminal (dimmed) case is not checked"
fi
node --input-type=module -e '
import fs from "node:fs";
const [dir] = process.argv.slice(1);
const read = (name) => fs.readFileSync(dir + "/" + name, "utf8");
const r = JSON.parse(read("run.json"));
const fail = (what) => { throw new Error(what + "\n" + JSON.stringify(r)); };
if (r.finish_reason !== "stop") fail("finish_reason");
if (typeof r.reasoning !== "string" || r.reasoning.length === 0) fail("no reasoning");
if (!(r.usage.reasoning_tokens > 0 && r.usage.reasoning_tokens < r.usage.completion_tokens)) fail("usage.reasoning_tokens");
if (JSON.parse(r.text).city === undefined) fail("text is not the answer");
if (read("plain.txt") !== r.text + "\n") fail("hidden reasoning: stdout is not the answer alone: " + read("plain.txt"));
const shown = r.reasoning ? r.reasoning + "\n\n" + r.text + "\n" : r.text + "\n";
if (read("shown.txt") !== shown) fail("--show-reasoning: " + JSON.stringify(read("shown.txt")));
if (read("shown.txt").includes("\x1b")) fail("escape codes in a pipe");
const packed = JSON.parse(read("packed.json"));
if (typeof packed.reasoning !== "string" || JSON.parse(packed.text).city === undefined) fail("packed file: " + read("packed.json"));
const line = JSON.parse(read("batch.jsonl"));
if (line.answer?.city === undefined || typeof line.reasoning !== "string" || !line.reasoning) fail("batch: " + read("batch.jsonl"));
if (line.answer.city !== JSON.parse(r.text).city || line.reasoning !== r.reasoning) fail("batch differs from run: " + read("batch.jsonl"));
const instruct = JSON.parse(read("instruct.json"));
if ("reasoning" in instruct || "reasoning_tokens" in instruct.usage || typeof instruct.text !== "string") fail("instruct json changed");
if (fs.existsSync(dir + "/tty.txt")) {
  const tty = read("tty.txt").replace(/\r\n/g, "\n");
  if (r.reasoning && !tty.includes("\x1b[2m" + r.reasoning)) fail("not dimmed on a terminal: " + JSON.stringify(tty));
  if (!tty.includes(r.text)) fail("terminal output lacks the answer: " + JSON.stringify(tty));
}
console.log("thinking run: ok (reasoning " + r.reasoning.length + " chars, answer " + r.text + ")");
' "$OUT"
