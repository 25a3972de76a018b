#include "cli/bench_figures.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "base/log.h"
#include "base/stage_profile.h"
#include "base/thread_pool.h"
#include "cli/synthetic_image.h"

namespace qvl::cli {
namespace {

using profile::Phase;
using profile::Work;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0
                   : (v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

GenerationRequest text_request(const std::string& text, int64_t max_tokens) {
  GenerationRequest r;
  r.messages.push_back({"user", true, {{ContentPart::Kind::kText, text, -1}}});
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  r.draft_tokens = 0;  // plain decoding: the figures measure the steps (bench_speculative.h)
  return r;
}

// Every request of a run is new to the engine: the prefix cache would otherwise skip the
// prefill of a repeated prompt, and a repeated image would skip its vision too.
int next_unique() {
  static int counter = 0;
  return ++counter;
}

// Any decodable picture works: its content does not change the amount of work. The first pixels
// carry a counter so that no two are the same.
GenerationRequest image_request(int w, int h) {
  GenerationRequest r = text_request("", 1);
  r.messages[0].content_is_string = false;
  r.messages[0].parts = {{ContentPart::Kind::kImage, "", 0},
                         {ContentPart::Kind::kText, "Describe this image.", -1}};
  const int unique = next_unique();
  RgbImage image = synthetic_scene(w, h, unique);
  for (int i = 0; i < 4; ++i)
    image.pixels[static_cast<size_t>(i)] = static_cast<uint8_t>(unique >> (8 * i));
  r.images.push_back({encode_bmp(image), 0, 0});
  return r;
}

// A prompt of `target` tokens that starts with a number no other prompt of the run starts with.
std::string unique_prompt(const Engine& engine, int64_t target) {
  return prompt_of_length(engine, target, " r" + std::to_string(next_unique()) + ":");
}

// The figure's time (`figure_ms`, or the phase's if longer) split into the named works and
// "other", each divided by `per`. "other" is everything else: the phase's own time and any time
// outside the profiled scopes (the scheduler between steps, or the thread waiting for a core on a
// busy machine), so the stages always add up to the figure.
StageTimes stages_of(const profile::Totals& t, Phase phase,
                     std::initializer_list<std::pair<const char*, Work>> named, double per,
                     double figure_ms) {
  StageTimes out;
  double rest = std::max(t.phase_ms(phase), figure_ms);
  for (const auto& [name, work] : named) {
    out.emplace_back(name, t.ms(phase, work) / per);
    rest -= t.ms(phase, work);
  }
  out.emplace_back("other", rest / per);
  return out;
}

// Adds b into a (same names) divided by n; a empty takes b's names.
void accumulate(StageTimes& a, const StageTimes& b, int n) {
  if (a.empty()) {
    for (const auto& [name, ms] : b) a.emplace_back(name, 0.0);
  }
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) a[i].second += b[i].second / n;
}

StageTimes vision_stages(const profile::Totals& t, double figure_ms) {
  return stages_of(t, Phase::kVision,
                   {{"patch_embed", Work::kPatchEmbed},
                    {"blocks_gemm", Work::kMatmul},
                    {"attention", Work::kAttention},
                    {"merger_deepstack", Work::kMerger}},
                   1.0, figure_ms);
}

StageTimes decode_stages(const profile::Totals& t, double steps, double figure_ms) {
  return stages_of(t, Phase::kDecode,
                   {{"gemv", Work::kMatmul},
                    {"attention", Work::kAttention},
                    {"lm_head", Work::kLmHead},
                    {"sampler", Work::kSampler}},
                   steps, figure_ms);
}

double decode_rate(const GenerationResult& r) {
  // The first token comes from the prefill; the rest are decode steps.
  return 1000.0 * static_cast<double>(r.stats.completion_tokens - 1) / r.stats.decode_ms;
}

}  // namespace

std::string prompt_of_length(const Engine& engine, int64_t target, const std::string& start) {
  const int64_t overhead = static_cast<int64_t>(
      engine.tokenize("<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n").size());
  const char* words[] = {" alpha", " river", " stone", " cloud", " seven", " paper"};
  std::string text = start;
  int64_t count = 0, tokens = static_cast<int64_t>(engine.tokenize(text).size()) + overhead;
  // Words are about one token each: add as many as are missing (at least one) and count again,
  // so long prompts take a few tokenizations instead of one per word.
  while (tokens < target) {
    for (int64_t add = std::max<int64_t>(1, (target - tokens) / 2); add > 0; --add) {
      text += words[count++ % 6];
    }
    tokens = static_cast<int64_t>(engine.tokenize(text).size()) + overhead;
    if (target - tokens < 4) {
      while (tokens < target) {
        text += words[count++ % 6];
        tokens = static_cast<int64_t>(engine.tokenize(text).size()) + overhead;
      }
    }
  }
  return text;
}

void reset_peak_rss() {
  // "5" resets the process's resident high-water mark to its current RSS (Linux 4.0 and later).
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  if (!clear) {
    QVL_LOG(kWarn) << "bench: cannot reset the peak RSS; it includes the machine probe";
  }
}

double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // in kB
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

RunFigures measure_run(Engine& engine, const BenchSettings& s) {
  profile::set_enabled(true);
  RunFigures f;
  f.threads = ThreadPool::global().size();
  std::vector<double> vision_small, vision_large, vision_page, prefill_tps, decode_tps, ttft;
  for (int rep = 0; rep < s.repeats; ++rep) {
    profile::reset();
    const GenerationResult small = engine.generate(image_request(448, 448));
    vision_small.push_back(small.stats.image_ms);
    ttft.push_back(small.stats.ttft_ms);
    f.ttft_prompt_tokens = small.stats.prompt_tokens;
    f.vision_small.patches = small.stats.image_tokens * engine.info().cost.patches_per_image_token;
    accumulate(f.vision_small.stages, vision_stages(profile::totals(), small.stats.image_ms),
               s.repeats);
    if (s.large_image) {
      profile::reset();
      const GenerationResult large = engine.generate(image_request(1024, 768));
      vision_large.push_back(large.stats.image_ms);
      f.vision_large.patches =
          large.stats.image_tokens * engine.info().cost.patches_per_image_token;
      accumulate(f.vision_large.stages, vision_stages(profile::totals(), large.stats.image_ms),
                 s.repeats);
      profile::reset();
      const GenerationResult page = engine.generate(image_request(1600, 1200));
      vision_page.push_back(page.stats.image_ms);
      f.vision_page.patches = page.stats.image_tokens * engine.info().cost.patches_per_image_token;
      accumulate(f.vision_page.stages, vision_stages(profile::totals(), page.stats.image_ms),
                 s.repeats);
    }

    profile::reset();
    const GenerationResult pre =
        engine.generate(text_request(unique_prompt(engine, s.prompt_tokens), 1));
    f.prompt_tokens = pre.stats.prompt_tokens;
    prefill_tps.push_back(1000.0 * static_cast<double>(pre.stats.prompt_tokens) /
                          pre.stats.prompt_ms);
    accumulate(
        f.prefill_stages,
        stages_of(
            profile::totals(), Phase::kPrefill,
            {{"gemm", Work::kMatmul}, {"attention", Work::kAttention}, {"lm_head", Work::kLmHead}},
            1.0, pre.stats.prompt_ms),
        s.repeats);

    profile::reset();
    const GenerationResult dec =
        engine.generate(text_request("Count. r" + std::to_string(next_unique()), s.decode_tokens));
    decode_tps.push_back(decode_rate(dec));
    const auto steps = static_cast<double>(std::max<int64_t>(1, dec.stats.completion_tokens - 1));
    f.decode_mean_context = static_cast<double>(dec.stats.prompt_tokens) + steps / 2;
    accumulate(f.decode_stages, decode_stages(profile::totals(), steps, dec.stats.decode_ms),
               s.repeats);
    f.decode_dispatches_per_token +=
        static_cast<double>(profile::totals().dispatches[static_cast<int>(Phase::kDecode)]) /
        steps / s.repeats;
  }
  f.vision_small.ms = median(vision_small);
  f.vision_large.ms = median(vision_large);
  f.vision_page.ms = median(vision_page);
  f.prompt_tok_per_s = median(prefill_tps);
  f.decode_tok_per_s = median(decode_tps);
  f.ttft_image_448_ms = median(ttft);
  f.peak_rss_mib_before_contexts = peak_rss_mib();

  // Decode after a long prompt: once per context (each costs a prefill of that length).
  for (const int64_t context : s.contexts) {
    if (context <= 0) {
      f.contexts.push_back({0, f.decode_tok_per_s, f.decode_mean_context, f.decode_stages});
      continue;
    }
    if (context + s.decode_tokens >= engine.info().context_length) {
      QVL_LOG(kWarn) << "bench: context " << context << " + " << s.decode_tokens
                     << " tokens exceeds the model's " << engine.info().context_length
                     << "; skipped";
      continue;
    }
    profile::reset();
    const GenerationResult r =
        engine.generate(text_request(unique_prompt(engine, context), s.decode_tokens));
    const auto steps = static_cast<double>(std::max<int64_t>(1, r.stats.completion_tokens - 1));
    f.contexts.push_back({context, decode_rate(r),
                          static_cast<double>(r.stats.prompt_tokens) + steps / 2,
                          decode_stages(profile::totals(), steps, r.stats.decode_ms)});
  }
  return f;
}

}  // namespace qvl::cli
