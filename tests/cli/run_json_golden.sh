#!/usr/bin/env bash
# `qvl run --messages ... --json` (the interface other tools rely on) reproduces the golden
# prompt ids and greedy tokens of the two-image case, with images given as file:// and data: URIs.
set -euo pipefail
QVL=$1 GOLDEN=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT"
node -e '
const fs = require("fs");
const [golden, out] = process.argv.slice(1);
const m = JSON.parse(fs.readFileSync(golden + "/manifest.json"));
const c = m.cases.find(c => c.name === "iv_two_images");
let k = 0;
const messages = c.messages.map(msg => ({role: msg.role, content: typeof msg.content === "string" ? msg.content :
  msg.content.map(p => {
    if (p.type !== "image") return p;
    const file = golden + "/" + c.images[k++].file;
    const url = k === 1 ? "file://" + file : "data:image/png;base64," + fs.readFileSync(file).toString("base64");
    return {type: "image_url", image_url: {url}};
  })}));
fs.writeFileSync(out + "/conv.json", JSON.stringify(messages));
fs.writeFileSync(out + "/expected.json", JSON.stringify({tokens: c.generated_tokens, n: c.prompt_len}));
' "$GOLDEN" "$OUT"
"$QVL" --log-level warn run -m "$GOLDEN" --messages "$OUT/conv.json" --temperature 0 \
  --max-tokens 16 --ignore-eos --image-max-tokens 16384 --json > "$OUT/out.txt"
node -e '
const fs = require("fs");
const lines = fs.readFileSync(process.argv[1], "utf8").trim().split("\n");
const r = JSON.parse(lines[lines.length - 1]);
const e = JSON.parse(fs.readFileSync(process.argv[2]));
if (r.prompt_ids.length !== e.n) throw new Error("prompt length " + r.prompt_ids.length + " != " + e.n);
if (JSON.stringify(r.completion_ids) !== JSON.stringify(e.tokens)) throw new Error("tokens differ");
for (const k of ["text", "timings"]) if (!(k in r)) throw new Error("missing " + k);
' "$OUT/out.txt" "$OUT/expected.json"
echo OK
