#include "cli/bench_command.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "hub/model_pull.h"
#include "qvl/engine.h"

namespace qvl::cli {
namespace {

struct BenchOptions {
  std::string model;
  int threads = 0;
  std::string quant;  // empty: q8 for a folder, as stored for a pre-packed file
  std::string vision_quant;
  int repeats = 3;
  int64_t prompt_tokens = 512;
  int64_t decode_tokens = 128;
  bool json = false;
  bool skip_large_image = false;
};

// A 24-bit BMP of smooth colour gradients with some texture: any decodable image works, the
// pixel content does not change the amount of work.
std::vector<uint8_t> synthetic_bmp(int w, int h) {
  const int row = (w * 3 + 3) / 4 * 4;
  const uint32_t data = static_cast<uint32_t>(row * h), file = 54 + data;
  std::vector<uint8_t> b(file, 0);
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  b[0] = 'B';
  b[1] = 'M';
  put32(2, file);
  put32(10, 54);
  put32(14, 40);
  put32(18, static_cast<uint32_t>(w));
  put32(22, static_cast<uint32_t>(h));
  b[26] = 1;
  b[28] = 24;
  put32(34, data);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &b[54 + static_cast<size_t>(y) * row + x * 3];
      p[0] = static_cast<uint8_t>(x * 255 / w);
      p[1] = static_cast<uint8_t>(y * 255 / h);
      p[2] = static_cast<uint8_t>((x * 7 + y * 13) & 255);
    }
  return b;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0
                   : (v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

GenerationRequest text_request(const std::string& text, int64_t max_tokens) {
  GenerationRequest r;
  r.messages.push_back({"user", true, {{ContentPart::Kind::kText, text, -1}}});
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

GenerationRequest image_request(int w, int h) {
  GenerationRequest r = text_request("", 1);
  r.messages[0].content_is_string = false;
  r.messages[0].parts = {{ContentPart::Kind::kImage, "", 0},
                         {ContentPart::Kind::kText, "Describe this image.", -1}};
  r.images.push_back({synthetic_bmp(w, h), 0, 0});
  return r;
}

// A user message whose chat prompt is exactly `target` tokens long (at least the template's).
std::string prompt_of_length(const Engine& engine, int64_t target) {
  const int64_t overhead = static_cast<int64_t>(
      engine.tokenize("<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n").size());
  std::string text;
  const char* words[] = {" alpha", " river", " stone", " cloud", " seven", " paper"};
  for (int64_t i = 0; static_cast<int64_t>(engine.tokenize(text).size()) + overhead < target; ++i) {
    text += words[i % 6];
  }
  return text;
}

void bench(const BenchOptions& o) {
  if (o.repeats < 1) fail(ErrorCode::kInvalidArgument, "--repeats must be at least 1");
  EngineOptions eo;
  eo.model_dir = hub::resolve_model(o.model, {});
  eo.threads = o.threads;
  eo.quant = o.quant;
  eo.vision_quant = o.vision_quant;
  eo.image_max_tokens = 1024;  // 448x448 -> 196 tokens and 1024x768 -> 768 tokens, unscaled
  const Timer load_timer;
  auto engine = Engine::load(eo);
  const double load_ms = load_timer.millis();
  const std::string prompt = prompt_of_length(*engine, o.prompt_tokens);

  std::vector<double> vision_small, vision_large, prefill_tps, decode_tps, ttft;
  int64_t prompt_len = 0;
  for (int rep = 0; rep < o.repeats; ++rep) {
    const GenerationResult small = engine->generate(image_request(448, 448));
    vision_small.push_back(small.stats.image_ms);
    ttft.push_back(small.stats.ttft_ms);
    if (!o.skip_large_image) {
      vision_large.push_back(engine->generate(image_request(1024, 768)).stats.image_ms);
    }
    const GenerationResult pre = engine->generate(text_request(prompt, 1));
    prompt_len = pre.stats.prompt_tokens;
    prefill_tps.push_back(1000.0 * pre.stats.prompt_tokens / pre.stats.prompt_ms);
    const GenerationResult dec = engine->generate(text_request("Count.", o.decode_tokens));
    // The first token comes from the prefill; the rest are decode steps.
    decode_tps.push_back(1000.0 * (dec.stats.completion_tokens - 1) / dec.stats.decode_ms);
  }
  nlohmann::json j = {{"model", eo.model_dir},
                      {"quant", engine->info().weights},
                      {"vision_quant", engine->info().vision_weights},
                      {"kv_cache", engine->info().kv_cache},
                      {"threads", ThreadPool::global().size()},
                      {"repeats", o.repeats},
                      {"load_ms", load_ms},
                      {"vision_448x448_ms", median(vision_small)},
                      {"prompt_tokens", prompt_len},
                      {"prompt_tok_per_s", median(prefill_tps)},
                      {"decode_tokens", o.decode_tokens},
                      {"decode_tok_per_s", median(decode_tps)},
                      {"ttft_image_448_ms", median(ttft)},
                      {"peak_rss_mib", peak_rss_mib()}};
  if (!o.skip_large_image) j["vision_1024x768_ms"] = median(vision_large);
  if (o.json) {
    std::puts(j.dump().c_str());
    return;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::printf("%-22s %s\n", it.key().c_str(), it.value().dump().c_str());
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure load, vision, prefill and decode speed");
  cmd->add_option("-m,--model", o->model, "Model folder, pre-packed file or hub id")->required();
  cmd->add_option("--threads", o->threads, "Threads (default: physical cores)");
  cmd->add_option("--quant", o->quant,
                  "Weights: exact (fp32 oracle), bf16, q8 or q4 (default: q8 for a folder, as "
                  "stored for a pre-packed file)")
      ->check(CLI::IsMember({"exact", "bf16", "q8", "q4"}));
  cmd->add_option("--vision-quant", o->vision_quant,
                  "Vision tower's big matrices: bf16 or q8 (default: bf16 for a folder, as stored "
                  "for a pre-packed file)")
      ->check(CLI::IsMember({"bf16", "q8"}));
  cmd->add_option("--repeats", o->repeats, "Repeats; medians are reported")->capture_default_str();
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "Prompt length for the prefill figure")
      ->capture_default_str();
  cmd->add_option("--decode-tokens", o->decode_tokens, "Tokens for the decode figure")
      ->capture_default_str();
  cmd->add_flag("--skip-large-image", o->skip_large_image, "Skip the 1024x768 image");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] { bench(*o); });
}

}  // namespace qvl::cli
