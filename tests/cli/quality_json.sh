#!/usr/bin/env bash
# `qvl quality --json`: on the golden cases (golden greedy tokens as the continuation) and on the
# built-in prompts with drawn images, every weight type is compared with exact at every scored
# position, and bad arguments fail with an error instead of a table.
set -euo pipefail
QVL=$1 GOLDEN=$2
golden=$("$QVL" --log-level warn quality -m "$GOLDEN" --golden "$GOLDEN" --quant exact,bf16,q4 \
         --json | tail -1)
builtin=$("$QVL" --log-level warn quality -m "$GOLDEN" --quant q8 --tokens 4 --json | tail -1)
node -e '
const g = JSON.parse(process.argv[1]), b = JSON.parse(process.argv[2]);
const fail = m => { throw new Error(m + "\n" + process.argv[1] + "\n" + process.argv[2]); };
const m = JSON.parse(require("fs").readFileSync(process.argv[3] + "/manifest.json"));
if (g.prompts.length !== m.cases.length) fail("golden prompts");
const positions = m.cases.reduce((s, c) => s + c.generated_tokens.length + 1, 0);
const types = Object.fromEntries(g.types.map(t => [t.quant, t]));
for (const q of ["exact", "bf16", "q4"]) {
  const t = types[q].total;
  if (t.positions !== positions) fail(q + " positions " + t.positions);
  if (!(t.mean_kl >= 0 && t.max_kl >= t.mean_kl && t.top1_agreement <= 1)) fail(q + " stats");
  if (!(t.mean_reference_entropy > 0 && t.min_reference_margin >= 0)) fail(q + " reference");
}
// exact against itself is deterministic; bf16 keeps the golden greedy tokens.
if (types.exact.total.mean_kl !== 0 || types.exact.total.top1_agreement !== 1) fail("exact");
if (!types.bf16.keeps_greedy_tokens) fail("bf16 greedy");
if (!(types.q4.total.mean_kl > types.bf16.total.mean_kl)) fail("q4 should be further than bf16");
if (b.prompts.length !== 2 || b.types.length !== 1 || b.types[0].quant !== "q8") fail("builtin");
for (const p of b.prompts) {
  if (p.images !== 1 || p.continuation_tokens < 1 || p.continuation_tokens > 4) fail("builtin");
}
if (b.types[0].total.positions !== b.prompts.reduce((s, p) => s + p.continuation_tokens + 1, 0))
  fail("builtin positions");
' "$golden" "$builtin" "$GOLDEN"
for bad in "--quant q5" "--golden /nonexistent" "--tokens 0"; do
  if "$QVL" --log-level warn quality -m "$GOLDEN" $bad > /dev/null 2>&1; then
    echo "accepted $bad" >&2
    exit 1
  fi
done
echo OK
