#!/usr/bin/env bash
# `qvl run --json-schema FILE` and `--json-object`: the answer (sampled from the random-weight
# tiny model, so only the constraint can make it valid) parses as JSON and matches the schema
# (checked by ajv); `--json` still prints the machine-readable object, with timings.constraint_ms.
set -euo pipefail
QVL=$1 MODEL=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT"
cat > "$OUT/schema.json" <<'JSON'
{"type": "object", "properties": {"city": {"type": "string"}, "day": {"type": "string", "format": "date"},
 "temps": {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3}},
 "required": ["city", "day", "temps"], "additionalProperties": false}
JSON
for seed in 1 2; do
  "$QVL" --log-level warn run -m "$MODEL" --json-schema "$OUT/schema.json" --temperature 1 \
    --seed "$seed" --max-tokens 80 --json "Weather as JSON" > "$OUT/out$seed.json"
done
"$QVL" --log-level warn run -m "$MODEL" --json-object --temperature 1 --seed 3 --max-tokens 40 \
  --json "JSON" > "$OUT/object.json"
# The README's receipt example schema, with an image.
"$QVL" --log-level warn run -m "$MODEL" --json-schema examples/receipt.schema.json --temperature 1 \
  --seed 4 --max-tokens 400 --json --image "$MODEL/images/a_ii_shapes_200x120.png" \
  "Extract this receipt." > "$OUT/receipt.json"
node --input-type=module -e '
import fs from "node:fs";
import Ajv from "ajv";
import addFormats from "ajv-formats";
const [dir] = process.argv.slice(1);
const ajv = new Ajv({ strict: false });
addFormats(ajv);
const validate = ajv.compile(JSON.parse(fs.readFileSync(dir + "/schema.json")));
const receipt = ajv.compile(JSON.parse(fs.readFileSync("examples/receipt.schema.json")));
for (const name of ["out1.json", "out2.json", "object.json", "receipt.json"]) {
  const r = JSON.parse(fs.readFileSync(dir + "/" + name, "utf8").trim().split("\n").pop());
  if (r.finish_reason !== "stop") throw new Error(name + ": finish_reason " + r.finish_reason);
  if (!(r.timings.constraint_ms >= 0)) throw new Error(name + ": no timings.constraint_ms");
  const value = JSON.parse(r.text);
  if (name === "object.json") {
    if (typeof value !== "object" || Array.isArray(value) || value === null) throw new Error("not an object: " + r.text);
  } else if (name === "receipt.json") {
    if (!receipt(value)) throw new Error("receipt: " + r.text + " " + JSON.stringify(receipt.errors));
  } else if (!validate(value)) {
    throw new Error(name + ": " + r.text + " " + JSON.stringify(validate.errors));
  }
}
console.log("ok");
' "$OUT"
