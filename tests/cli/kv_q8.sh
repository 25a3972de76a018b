#!/usr/bin/env bash
# The 8-bit KV cache (--kv-type q8): its quality against the 16-bit cache of the same weights is
# measured and bounded; the server uses it (/props) and a request's greedy answer is the same
# alone and batched with others (batch invariance holds for 8-bit KV too).
set -euo pipefail
QVL=$1 TOKENIZER=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT"
# tiny-odd has head_dim 32, a whole 8-bit block per head (the shared tiny model has 16).
"$QVL" --log-level warn gen-model --preset tiny-odd --tokenizer "$TOKENIZER" --out "$OUT/m" --seed 7
report=$("$QVL" --log-level warn quality -m "$OUT/m" --quant q8 --kv-type f16,q8 --tokens 8 \
         --json | tail -1)
node -e '
const r = JSON.parse(process.argv[1]);
const [f16, q8] = r.types;
if (f16.kv_type !== "f16" || q8.kv_type !== "q8") throw new Error("kv types: " + process.argv[1]);
const d = q8.vs_f16_kv;
if (!d || !(d.positions > 0) || !(d.mean_kl >= 0 && d.mean_kl < 1e-3) || d.top1_agreement < 0.9)
  throw new Error("8-bit KV too far from 16-bit: " + JSON.stringify(d));
console.log("8-bit vs 16-bit KV: mean KL " + d.mean_kl + ", top-1 " + d.top1_agreement);
' "$report"

"$QVL" --log-level warn serve -m "$OUT/m" --quant q4 --kv-type q8 --host 127.0.0.1 --port 0 \
  --parallel 4 >"$OUT/port" 2>"$OUT/serve.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 300); do grep -q "listening on" "$OUT/port" 2>/dev/null && break; sleep 0.1; done
port=$(sed -nE 's/.*listening on http:\/\/[^ ]*:([0-9]+).*/\1/p' "$OUT/port" | head -1)
[ -n "$port" ] || { echo "the server did not start:"; cat "$OUT/serve.log"; exit 1; }
node -e '
const base = "http://127.0.0.1:" + process.argv[1];
const ask = text => fetch(base + "/v1/chat/completions", {method: "POST",
  headers: {"content-type": "application/json"},
  body: JSON.stringify({model: "m", messages: [{role: "user", content: text}], temperature: 0,
                        max_tokens: 24, ignore_eos: true})}).then(r => r.json());
(async () => {
  for (let i = 0; i < 100; ++i) {
    try { if ((await fetch(base + "/health")).ok) break; } catch {}
    await new Promise(r => setTimeout(r, 100));
  }
  const props = await (await fetch(base + "/props")).json();
  if (props.cache.kv_storage !== "q8") throw new Error("kv storage " + JSON.stringify(props.cache));
  const questions = ["One", "Two apples and a pear", "Three", "Four: count to ten"];
  const alone = [];
  for (const q of questions) alone.push((await ask(q)).choices[0].message.content);
  const together = (await Promise.all(questions.map(ask))).map(r => r.choices[0].message.content);
  for (let i = 0; i < questions.length; ++i)
    if (alone[i] !== together[i]) throw new Error("request " + i + " differs batched");
  console.log("8-bit KV: batched answers equal the alone answers");
})().catch(e => { console.error(e); process.exit(1); });
' "$port"
