#!/usr/bin/env bash
# `qvl bench --json` reports every figure (positive numbers) in one JSON object, next to the
# machine probe's ceilings, with per-stage breakdowns and the scaling over a list of thread counts;
# the video figures (a clip, and its sampled frames as images); the document figures (a 10-page
# PDF at 1280 tokens a page: rendering, vision, prefill and decode per page, pages per minute).
set -euo pipefail
QVL=$1 MODEL=$2
out=$("$QVL" --log-level warn bench -m "$MODEL" --repeats 1 --prompt-tokens 64 --decode-tokens 8 \
      --skip-large-image --contexts 0,1024 --threads 1,2 --probe-seconds 0.02 \
      --probe-buffer-mib 512 --json | tail -1)
probe=$("$QVL" --log-level warn bench --probe-only --probe-seconds 0.02 --json | tail -1)
# q4 takes a q8 vision tower by default: the report names it and its int8 arithmetic.
q4=$("$QVL" --log-level warn bench -m "$MODEL" --quant q4 --repeats 1 --prompt-tokens 16 \
     --decode-tokens 2 --skip-video --skip-document --contexts 0 --threads 1 --probe-seconds 0.02 --json |
     tail -1)
node -e '
const r = JSON.parse(process.argv[1]);
if (r.vision_weights !== "q8" || r.vision_arithmetic !== "int8") throw new Error("q4 vision " + process.argv[1]);
if ("document_pages_per_min" in r) throw new Error("--skip-document measured the document");
// The large images: 1024x768 and a page at OCR resolution, 1600x1200, and how much more it costs.
for (const k of ["vision_1024x768_ms", "vision_1600x1200_ms", "vision_1600x1200_pct_of_peak"])
  if (!(r[k] > 0)) throw new Error(k + " missing: " + process.argv[1]);
if (Math.abs(r.vision_1600x1200_over_1024x768 - r.vision_1600x1200_ms / r.vision_1024x768_ms) > 1e-9)
  throw new Error("vision_1600x1200_over_1024x768");
' "$q4"
node -e '
const r = JSON.parse(process.argv[1]), probe = JSON.parse(process.argv[2]);
const fail = (what) => { throw new Error(what + ": " + process.argv[1]); };
const positive = (o, k) => { if (!(typeof o[k] === "number" && o[k] > 0)) fail(k + " missing"); };
const percent = (o, k) => {
  if (!(typeof o[k] === "number" && o[k] >= 0 && o[k] < 1000)) fail(k + " not a percentage");
};
for (const k of ["load_ms", "vision_448x448_ms", "prompt_tok_per_s", "decode_tok_per_s",
                 "ttft_image_448_ms", "peak_rss_mib", "peak_rss_mib_image_and_prompt", "threads",
                 "decode_bytes_per_token",
                 "decode_tok_per_s_ctx0", "decode_tok_per_s_ctx1k", "prompt_gflop_per_s",
                 "vision_448x448_gflop_per_s", "decode_gb_per_s", "ttft_image_448_floor_ms"])
  positive(r, k);
if (r.peak_rss_mib_image_and_prompt > r.peak_rss_mib) fail("peak before the contexts above the peak");
// The machine probe reads a buffer of buffer_mib first (512 here: well above the peak of the
// tiny model, ~110 MiB with a 151k-token tokenizer); the peaks are those of the model run.
if (r.machine.buffer_mib !== 512) fail("buffer_mib");
if (!(r.peak_rss_mib < r.machine.buffer_mib / 2)) fail("peak_rss_mib holds the probe buffer");
for (const k of ["decode_pct_of_dram", "decode_pct_of_dram_ctx1k", "decode_pct_of_dram_stream",
                 "decode_pct_of_dram_stream_ctx1k", "prompt_pct_of_peak",
                 "vision_448x448_pct_of_peak", "ttft_image_448_pct_of_floor"])
  percent(r, k);
if (r.prompt_tokens !== 64) fail("prompt_tokens " + r.prompt_tokens);
// The 10 s 640x360 clip (30 fps, H.264 made in process) at 2 fps: 20 frames of 640x352, 220
// tokens a pair; as 20 images, 220 tokens each: twice the tokens.
if (r.video_clip_codec !== "h264" || r.video_10s_640x360_frames !== 20) fail("video frames");
if (r.video_10s_640x360_tokens !== 2200 || r.video_as_images_tokens !== 4400) fail("video tokens");
for (const k of ["video_decode_ms", "video_vision_ms", "ttft_video_10s_ms",
                 "video_as_images_vision_ms", "ttft_video_as_images_ms"])
  positive(r, k);
// The 10-page Letter PDF at the 1280-token default: 992x1312 pixels, 1271 image tokens a page;
// --repeats 1 answers one page with 32 tokens.
if (r.document_page_image_tokens !== 1271 || r.document_decode_tokens !== 32 ||
    r.document_pages_answered !== 1) fail("document page");
if (!(r.document_page_prompt_tokens > 1271)) fail("document prompt");
for (const k of ["document_pages_per_min", "document_render_ms_per_page", "document_vision_ms_per_page",
                 "document_prefill_ms_per_page", "document_decode_ms_per_page"])
  positive(r, k);
const pageMs = r.document_render_ms_per_page + r.document_vision_ms_per_page +
               r.document_prefill_ms_per_page + r.document_decode_ms_per_page;
if (Math.abs(r.document_pages_per_min - 60000 / pageMs) > 1e-6 * r.document_pages_per_min) fail("pages/min");
// No --quant on a folder: q8 weights with the 16-bit KV cache; vision bf16.
if (r.quant !== "q8" || r.kv_cache !== "f16" || r.vision_weights !== "bf16") fail("types");
// q8 prompts: the int8 GEMM (default), or fp32 activations with QVL_GEMM_ACT=f32.
if (r.prefill_arithmetic !== (process.env.QVL_GEMM_ACT === "f32" ? "fp32" : "int8")) fail("prefill_arithmetic");

// The vision attention: bf16 products exactly where vdpbf16ps runs (AVX-512 BF16).
const bf16_attention = r.machine.isa === "avx512" && r.machine.bf16_instruction !== null;
if (r.vision_attention_arithmetic !== (bf16_attention ? "bf16" : "fp32")) fail("vision_attention_arithmetic");

// The machine: ISA in use and every ceiling at 1 and 2 threads (bf16 only with vdpbf16ps).
for (const m of [r.machine, probe]) {
  if (!["scalar", "avx2", "avx512"].includes(m.isa)) fail("isa " + m.isa);
  for (const t of ["1", "2"]) {
    const f = m.threads[t];
    if (!f) fail("machine threads " + t);
    for (const k of ["dram_read_gb_per_s", "dram_stream_gb_per_s", "fp32_fma_gflop_per_s",
                     "int8_dot_gop_per_s"])
      positive(f, k);
    if ((f.bf16_dot_gflop_per_s === null) !== (m.bf16_instruction === null)) fail("bf16");
    // Little law: the bytes in flight per core of the sustained read, from its rate and latency.
    const want = Math.round(f.dram_stream_gb_per_s / Number(t) * m.dram_latency_ns);
    if (f.dram_stream_bytes_in_flight_per_core !== want) fail("bytes in flight, threads " + t);
  }
  // A dependent load from DRAM takes tens to hundreds of ns (microseconds would be a unit slip).
  if (!(m.dram_latency_ns > 5 && m.dram_latency_ns < 5000)) fail("dram_latency_ns " + m.dram_latency_ns);
}

// One run per thread count, the last at the top level, and the 1 -> 2 speed-ups.
if (r.runs.length !== 2 || r.runs[0].threads !== 1 || r.runs[1].threads !== 2 || r.threads !== 2)
  fail("runs");
for (const k of ["decode_tok_per_s", "prompt_tok_per_s", "vision_448x448_ms",
                 "decode_tok_per_s_ctx1k"])
  positive(r.scaling["1->2"], k);

// Stage breakdowns add up to the measured time: "other" takes what the named stages leave of the
// interval of the figure, and the named stages never exceed it.
const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);
const covers = (stages, names, total, what) => {
  for (const n of names) if (!(typeof stages[n] === "number" && stages[n] >= 0)) fail(what + n);
  const s = sum(stages);
  // (Phase scopes also hold a little time outside the figure timers: the first sample, ~1 ms.)
  if (!(s >= 0.99 * total && s <= 1.05 * total + 2)) fail(what + " sum " + s + " vs " + total);
  if (!(s - stages.other <= 1.05 * total + 2)) fail(what + " named stages above " + total);
};
covers(r.stages.vision_448x448_ms,
       ["patch_embed", "blocks_gemm", "attention", "merger_deepstack", "other"],
       r.vision_448x448_ms, "vision ");
covers(r.stages.prefill_ms, ["gemm", "attention", "lm_head", "other"],
       1000 * r.prompt_tokens / r.prompt_tok_per_s, "prefill ");
covers(r.stages.decode_ms_per_token, ["gemv", "attention", "lm_head", "sampler", "other"],
       1000 / r.decode_tok_per_s, "decode ");
covers(r.stages.decode_ctx1k_ms_per_token, ["gemv", "attention", "lm_head", "sampler", "other"],
       1000 / r.decode_tok_per_s_ctx1k, "decode at 1k ");
// The KV cache read by decode attention after a context, against DRAM bandwidth.
positive(r.stage_efficiency, "decode_attention_gb_per_s_ctx1k");
percent(r.stage_efficiency, "decode_attention_pct_of_dram_ctx1k");
// The bytes each core keeps in flight streaming weights, for the matrices and the output head.
positive(r.stage_efficiency, "decode_gemv_bytes_in_flight_per_core");
positive(r.stage_efficiency, "decode_lm_head_bytes_in_flight_per_core");
for (const [o, k] of [[r.stages.prefill_ms, "gemm"], [r.stages.decode_ms_per_token, "gemv"],
                      [r.stages.vision_448x448_ms, "blocks_gemm"]])
  positive(o, k);
' "$out" "$probe"
echo OK
