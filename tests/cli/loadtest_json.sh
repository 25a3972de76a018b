#!/usr/bin/env bash
# `qvl loadtest --json` against a real `qvl serve` on the tiny model: every reported number is
# there, positive and finite. Timing targets are not asserted (a loaded machine misses them).
set -euo pipefail
QVL=$1 MODEL=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT"
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
# A scenario name it does not know is an error, not an empty run.
if "$QVL" loadtest --url "http://127.0.0.1:$port" --scenario nope >/dev/null 2>&1; then
  echo "unknown scenario accepted"; exit 1
fi
echo OK
