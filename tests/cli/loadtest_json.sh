#!/usr/bin/env bash
# `qvl loadtest --json` against a real `qvl serve` on the tiny model: every reported number is
# there, positive and finite. Timing targets are not asserted (a loaded machine misses them).
set -euo pipefail
QVL=$1 MODEL=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT"
# The files exist before the server starts: the background job opens them only once it runs, and
# a `sed` on a missing file would end the script (set -e) before the server is even up.
: >"$OUT/serve.out" && : >"$OUT/serve.err"
"$QVL" --log-level warn serve -m "$MODEL" --host 127.0.0.1 --port 0 >"$OUT/serve.out" 2>"$OUT/serve.err" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
port=
for _ in $(seq 1200); do
  port=$(sed -n 's|.*listening on http://[^:]*:\([0-9]*\).*|\1|p' "$OUT/serve.out")
  [ -n "$port" ] && break
  kill -0 $server 2>/dev/null || { echo "server exited:"; cat "$OUT/serve.err"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "server did not listen"; exit 1; }

out=$("$QVL" loadtest --url "http://127.0.0.1:$port" --scenario conversation --scenario same-image \
      --answer-tokens 8 --image-size 224 --ready-timeout 120 --json)
node -e '
const r = JSON.parse(process.argv[1]);
const keys = {
  "conversation": ["ttft_turn1_ms", "ttft_turn2_ms", "ttft_ratio"],
  "same-image": ["ttft_cold_ms", "ttft_same_image_ms", "ttft_ratio"],
};
if (r.scenarios.length !== 2) throw new Error("expected 2 scenarios: " + process.argv[1]);
for (const s of r.scenarios) {
  for (const k of keys[s.scenario])
    if (!(typeof s[k] === "number" && Number.isFinite(s[k]) && s[k] > 0))
      throw new Error(s.scenario + "." + k + " is not a positive number: " + JSON.stringify(s));
  if (s.failures.length) throw new Error(s.scenario + " failures: " + s.failures);
  if (s.responses_by_status["200"] !== 2) throw new Error("responses " + JSON.stringify(s));
  if (s.targets.length !== 1 || s.targets[0].metric !== "ttft_ratio" || s.targets[0].op !== "<=" ||
      typeof s.pass !== "boolean")
    throw new Error("targets " + JSON.stringify(s.targets));
  // The scenario moved the server counters and the tool saw it.
  if (!(s.metrics_changed["qvl_image_tokens_total"].after > s.metrics_changed["qvl_image_tokens_total"].before))
    throw new Error("no image tokens in /metrics: " + JSON.stringify(s.metrics_changed));
}
if (r.scenarios[0].ttft_ms.length !== 2) throw new Error("ttft_ms per turn");
' "$out"
# Interference: token gaps of 3 streams (every token timed, with or without text) around an image.
out=$("$QVL" loadtest --url "http://127.0.0.1:$port" --scenario interference \
      --interference-tokens 12 --answer-tokens 4 --image-size 64 --json)
node -e '
const s = JSON.parse(process.argv[1]).scenarios[0];
if (s.failures.length || s.responses_by_status["200"] !== 4) throw new Error("run " + JSON.stringify(s));
// 3 streams of up to 12 tokens: a gap per token after the first, each chunk timed once.
if (!(s.token_gaps >= 3 && s.token_gaps <= 33)) throw new Error("token_gaps " + s.token_gaps);
for (const k of ["gap_median_ms", "gap_p99_ms", "gap_ratio_p99_median"])
  if (!(typeof s[k] === "number" && Number.isFinite(s[k]) && s[k] > 0)) throw new Error(k + " " + s[k]);
if (!(Number.isInteger(s.textless_tokens) && s.textless_tokens >= 0)) throw new Error("textless_tokens");
if (s.targets.length !== 1 || s.targets[0].metric !== "gap_ratio_p99_median") throw new Error("targets");
' "$out"
# Memory: a small run is held to weights + KV budget + image-cache budget + 300 MB, with the
# weights' size from /props (the folder's checkpoint plus the matrices packed from it).
out=$("$QVL" loadtest --url "http://127.0.0.1:$port" --scenario memory --conversations 2 \
      --memory-turns 2 --decode-tokens 8 --image-size 64 --server-pid $server --json)
props=$(node -e 'fetch(process.argv[1]).then(r => r.text()).then(t => console.log(t))' \
        "http://127.0.0.1:$port/props")
node -e '
const r = JSON.parse(process.argv[1]).scenarios[0], props = JSON.parse(process.argv[2]);
const ckpt = Number(process.argv[3]);
const w = props.runtime.weights_bytes;
if (!(w > ckpt && w < 3 * ckpt)) throw new Error("weights_bytes " + w + " vs checkpoint " + ckpt);
const budget = (w + props.cache.kv_cache_bytes + props.cache.image_cache_bytes + 300e6) / 2 ** 20;
if (Math.abs(r.budget_mib - budget) > 1e-6 * budget) throw new Error("budget " + JSON.stringify(r));
const t = r.targets.find(t => t.metric === "peak_rss_mib");
if (!t || t.op !== "<=" || Math.abs(t.bound - budget) > 1e-6 * budget || !t.met)
  throw new Error("memory target " + JSON.stringify(r.targets));
if (r.failures.length || r.turns_completed !== 4) throw new Error("memory run " + JSON.stringify(r));
' "$out" "$props" "$(stat -c %s "$MODEL/model.safetensors")"
# A scenario name it does not know is an error, not an empty run.
if "$QVL" loadtest --url "http://127.0.0.1:$port" --scenario nope >/dev/null 2>&1; then
  echo "unknown scenario accepted"; exit 1
fi
echo OK
