#!/usr/bin/env bash
# `qvl bench --json` reports every figure (positive numbers) in one JSON object.
set -euo pipefail
QVL=$1 MODEL=$2
out=$("$QVL" --log-level warn bench -m "$MODEL" --repeats 1 --prompt-tokens 64 --decode-tokens 8 \
      --skip-large-image --json | tail -1)
node -e '
const r = JSON.parse(process.argv[1]);
for (const k of ["load_ms", "vision_448x448_ms", "prompt_tok_per_s", "decode_tok_per_s",
                 "ttft_image_448_ms", "peak_rss_mib", "threads"])
  if (!(typeof r[k] === "number" && r[k] > 0)) throw new Error(k + " missing: " + process.argv[1]);
if (r.prompt_tokens !== 64) throw new Error("prompt_tokens " + r.prompt_tokens);
// No --quant on a folder: q8 weights with the 16-bit KV cache.
if (r.quant !== "q8" || r.kv_cache !== "f16") throw new Error("types " + r.quant + " " + r.kv_cache);
' "$out"
echo OK
