#!/usr/bin/env bash
# The parity tests find their cases when they run: a golden folder with other case names runs those
# cases (never zero tests that pass), and a folder whose manifest has no case fails.
set -euo pipefail
TEST_PARITY=$1 GOLDEN=$(realpath "$2") OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT/renamed" "$OUT/empty"
# Model files may point at siblings of the golden folder (tokenizer.json -> ../qwen3-tokenizer).
for s in "$(dirname "$GOLDEN")"/*; do [ "$s" = "$GOLDEN" ] || ln -s "$s" "$OUT/"; done
for d in "$OUT/renamed" "$OUT/empty"; do
  for f in "$GOLDEN"/*; do [ "$(basename "$f")" = manifest.json ] || ln -s "$(realpath "$f")" "$d/"; done
done
# Renamed: the first case only, under a name no build has seen.
node -e '
const fs = require("fs");
const m = JSON.parse(fs.readFileSync(process.argv[1]));
const renamed = {...m, cases: [{...m.cases[0], name: "zz_renamed_case"}]};
fs.writeFileSync(process.argv[2] + "/renamed/manifest.json", JSON.stringify(renamed));
fs.writeFileSync(process.argv[2] + "/empty/manifest.json", JSON.stringify({...m, cases: []}));
' "$GOLDEN/manifest.json" "$OUT"
FILTER='TextParity.PositionIds:ScoreParity.*'
out=$(QVL_GOLDEN_DIR="$OUT/renamed" "$TEST_PARITY" --gtest_filter="$FILTER" 2>&1) || {
  echo "renamed folder failed: $out"; exit 1; }
grep -q "case zz_renamed_case checked" <<<"$out" || { echo "renamed case did not run: $out"; exit 1; }
set +e
out=$(QVL_GOLDEN_DIR="$OUT/empty" "$TEST_PARITY" --gtest_filter="$FILTER" 2>&1); rc=$?
set -e
[ $rc -eq 1 ] && grep -q "has no cases in its manifest" <<<"$out" || {
  echo "a folder without cases must fail (rc=$rc): $out"; exit 1; }
echo "golden folders: cases found at run time; an empty folder fails"
