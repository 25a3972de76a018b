#include "cli/bench_command.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "cli/bench_document.h"
#include "cli/bench_figures.h"
#include "cli/bench_report.h"
#include "cli/bench_speculative.h"
#include "cli/bench_video.h"
#include "hub/model_pull.h"
#include "ops/machine_probe.h"
#include "qvl/engine.h"

namespace qvl::cli {
namespace {

struct BenchOptions {
  std::string model;
  std::vector<int> threads;  // empty: physical cores
  std::string quant;         // empty: q8 for a folder, as stored for a pre-packed file
  std::string lm_head;       // empty: the default for quant
  std::string vision_quant;  // empty: bf16 for a folder, as stored for a pre-packed file
  std::string kv_type;       // empty: f16
  BenchSettings settings;
  double probe_seconds = 0.2;
  int probe_buffer_mib = 0;  // 0: 4x the last-level cache, at least 64 MiB
  bool probe_only = false;
  bool json = false;
  bool skip_large_image = false;
  bool skip_document = false;
  bool skip_speculative = false;
  bool skip_video = false;
};

void print(const nlohmann::json& j, bool as_json) {
  if (as_json) {
    std::puts(j.dump().c_str());
  } else {
    print_bench_table(j);
  }
}

void bench(BenchOptions o) {
  if (o.settings.repeats < 1) fail(ErrorCode::kInvalidArgument, "--repeats must be at least 1");
  if (o.threads.empty()) o.threads = {0};
  // The machine first, before the model's pages compete for memory bandwidth and cache.
  ops::ProbeOptions po;
  po.seconds = o.probe_seconds;
  po.buffer_bytes = int64_t{o.probe_buffer_mib} << 20;
  po.threads = {1, physical_core_count()};
  for (int t : o.threads) po.threads.push_back(t > 0 ? t : physical_core_count());
  const ops::MachineProbe machine = ops::probe_machine(po);
  reset_peak_rss();  // the probe's buffers are freed: the peaks below are the model's
  if (o.probe_only) {
    print(machine_json(machine), o.json);
    return;
  }
  if (o.model.empty()) fail(ErrorCode::kInvalidArgument, "--model is required (or --probe-only)");

  EngineOptions eo;
  eo.model_dir = hub::resolve_model(o.model, {}, &eo.mmproj);
  eo.threads = o.threads.front();
  eo.quant = o.quant;
  eo.lm_head = o.lm_head;
  eo.vision_quant = o.vision_quant;
  eo.kv_type = o.kv_type;
  // 448x448 -> 196 tokens, 1024x768 -> 768 and 1600x1200 -> 1900 (1600x1216), unscaled.
  eo.image_max_tokens = 2048;
  eo.image_cache_mb = -1;   // every image is new anyway (see measure_run)
  eo.prefix_cache = false;  // so is every prompt: keeping their KV would only hold memory
  const Timer load_timer;
  auto engine = Engine::load(eo);
  const double load_ms = load_timer.millis();

  o.settings.large_image = !o.skip_large_image;
  std::vector<RunFigures> runs;
  for (const int t : o.threads) {
    ThreadPool::set_global_threads(t);
    runs.push_back(measure_run(*engine, o.settings));
  }
  BenchContext context;
  context.model = eo.model_dir;
  context.info = &engine->info();
  context.settings = &o.settings;
  context.machine = &machine;
  context.load_ms = load_ms;
  context.peak_rss_mib = peak_rss_mib();
  nlohmann::json report = bench_json(context, runs);
  if (!o.skip_speculative)
    add_speculative_json(measure_speculative(*engine, o.settings.repeats), report);
  if (!o.skip_video) {
    if (const auto video = measure_video(*engine, o.settings.repeats))
      add_video_json(*video, report);
  }
  if (!o.skip_document) {
    // One page answered per repeat, at most two: a big model's page takes tens of seconds.
    if (const auto document = measure_document(*engine, std::min(o.settings.repeats, 2)))
      add_document_json(*document, report);
  }
  print(report, o.json);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure load, vision, prefill and decode speed against the machine's ceilings");
  cmd->add_option("-m,--model", o->model, "Model folder, pre-packed file or hub id");
  cmd->add_option("--threads", o->threads,
                  "Threads, or a list (1,2) to run everything per count and report the scaling "
                  "(default: physical cores)")
      ->delimiter(',')
      ->check(CLI::Range(1, ThreadPool::kMaxThreads));
  cmd->add_option("--quant", o->quant,
                  "Weights: exact (fp32 oracle), bf16, q8 or q4 (default: q8 for a folder, as "
                  "stored for a pre-packed file)")
      ->check(CLI::IsMember({"exact", "bf16", "q8", "q4"}));
  cmd->add_option("--lm-head", o->lm_head,
                  "Output head type with bf16/q8/q4 weights: bf16, q8 or q4 (default: q8, bf16 for "
                  "bf16; as stored for a pre-packed file)")
      ->check(CLI::IsMember({"bf16", "q8", "q4"}));
  cmd->add_option("--vision-quant", o->vision_quant,
                  "Vision tower's big matrices: bf16 or q8 (default for a folder: q8 with --quant "
                  "q4, else bf16; as "
                  "stored for a pre-packed file)")
      ->check(CLI::IsMember({"bf16", "q8"}));
  cmd->add_option("--kv-type", o->kv_type,
                  "KV cache with bf16/q8/q4 weights: f16 (default) or q8 (8-bit, 0.56x the memory)")
      ->check(CLI::IsMember({"f16", "q8"}));
  cmd->add_option("--repeats", o->settings.repeats, "Repeats; medians are reported")
      ->capture_default_str();
  cmd->add_option("--prompt-tokens", o->settings.prompt_tokens,
                  "Prompt length for the prefill figure")
      ->capture_default_str();
  cmd->add_option("--decode-tokens", o->settings.decode_tokens, "Tokens for the decode figures")
      ->capture_default_str();
  cmd->add_option("--contexts", o->settings.contexts,
                  "Context lengths for the decode-after-context figures (each run once)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--probe-seconds", o->probe_seconds,
                  "Time per machine-probe figure and thread count")
      ->capture_default_str();
  cmd->add_option("--probe-buffer-mib", o->probe_buffer_mib,
                  "Buffer the machine probe reads for the DRAM bandwidth (default: 4x the "
                  "last-level cache, at least 64 MiB)")
      ->check(CLI::Range(0, 16384));
  cmd->add_flag("--probe-only", o->probe_only, "Only measure the machine (no model)");
  cmd->add_flag("--skip-large-image", o->skip_large_image,
                "Skip the 1024x768 and 1600x1200 images");
  cmd->add_flag("--skip-document", o->skip_document,
                "Skip the document figures (a 10-page PDF rendered at 1280 tokens a page, one or "
                "two pages answered)");
  cmd->add_flag("--skip-speculative", o->skip_speculative,
                "Skip the speculative-decoding figures (a receipt to JSON, a transcription; "
                "each with and without drafts)");
  cmd->add_flag("--skip-video", o->skip_video,
                "Skip the video figures (a 10 s 640x360 clip, and its sampled frames as images)");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] { bench(*o); });
}

}  // namespace qvl::cli
