// The measurements of `qvl bench` at one thread count: vision, prefill, decode (at several
// context lengths), time to first token, each with its per-stage breakdown from the stage
// profiler (base/stage_profile.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qvl/engine.h"

namespace qvl::cli {

struct BenchSettings {
  int repeats = 3;
  int64_t prompt_tokens = 512;
  int64_t decode_tokens = 128;
  std::vector<int64_t> contexts = {0, 1024, 4096};  // decode speed after this many tokens
  bool large_image = true;                          // the 1024x768 and 1600x1200 images
};

// Milliseconds per stage name, in report order.
using StageTimes = std::vector<std::pair<std::string, double>>;

struct VisionFigure {
  double ms = 0;        // median image time (decode, preprocess, vision tower)
  int64_t patches = 0;  // vision patches of the image
  StageTimes stages;    // mean over repeats
};

struct ContextFigure {
  int64_t context = 0;  // prompt tokens before decoding
  double tok_per_s = 0;
  double mean_context = 0;  // average KV length over the decode steps
  StageTimes stages;        // per token
};

struct RunFigures {
  int threads = 0;
  // 448x448, 1024x768 and 1600x1200 (a page at OCR resolution, ~1900 tokens); patches 0 when
  // skipped.
  VisionFigure vision_small, vision_large, vision_page;
  int64_t prompt_tokens = 0;
  double prompt_tok_per_s = 0;
  StageTimes prefill_stages;
  double decode_tok_per_s = 0;
  double decode_mean_context = 0;
  StageTimes decode_stages;                // per token
  double decode_dispatches_per_token = 0;  // thread-pool parallel regions (mean over repeats)
  double ttft_image_448_ms = 0;
  int64_t ttft_prompt_tokens = 0;  // prompt of the 448x448 request (image tokens included)
  // Peak resident memory of the process up to the long-context figures (images, prompt, decode,
  // first token): long contexts add their KV on top.
  double peak_rss_mib_before_contexts = 0;
  std::vector<ContextFigure> contexts;
};

// The process's peak resident memory (MiB) since start or since reset_peak_rss (which the bench
// calls after the machine probe: its DRAM buffer is not the model's memory).
double peak_rss_mib();
void reset_peak_rss();

// A user message starting with `start` whose chat prompt is `target` tokens long (at least the
// template's and start's).
std::string prompt_of_length(const Engine& engine, int64_t target, const std::string& start = "");

// Runs every figure on the global thread pool as it is configured now, with prompts and images
// no earlier request used (nothing comes from the engine's caches). Enables the profiler.
RunFigures measure_run(Engine& engine, const BenchSettings& settings);

}  // namespace qvl::cli
