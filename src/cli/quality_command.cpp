#include "cli/quality_command.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "base/log.h"
#include "base/timer.h"
#include "cli/synthetic_image.h"
#include "eval/golden_prompts.h"
#include "eval/quality_eval.h"
#include "hub/model_pull.h"
#include "qvl/engine.h"

namespace qvl::cli {
namespace {

using json = nlohmann::ordered_json;

struct QualityOptions {
  std::string model;
  std::vector<std::string> quants = {"bf16", "q8", "q4"};
  std::string lm_head;                            // empty: each type's default head
  std::vector<std::string> vision_quants = {""};  // "": each --quant's default
  std::vector<std::string> kv_types = {"f16"};
  std::string golden;
  int64_t continuation_tokens = 32;
  int64_t image_min_tokens = 0;
  int64_t image_max_tokens = 0;
  int threads = 0;
  bool json = false;
};

// The goldens were made with the reference processor's budget (64..16384 tokens); any
// other budget changes the grids, and the golden tokens would no longer be the reference's.
constexpr int64_t kGoldenImageMinTokens = 64;
constexpr int64_t kGoldenImageMaxTokens = 16384;

EngineOptions engine_options(const QualityOptions& o, const std::string& dir,
                             const std::string& quant, const std::string& vision_quant = "",
                             const std::string& kv_type = "") {
  EngineOptions eo;
  eo.model_dir = dir;
  eo.threads = o.threads;
  eo.quant = quant;
  eo.kv_type = kv_type;
  if (quant != "exact") eo.lm_head = o.lm_head;
  eo.vision_quant = vision_quant;
  const bool golden = !o.golden.empty();
  eo.image_min_tokens = o.image_min_tokens > 0 ? o.image_min_tokens
                        : golden               ? kGoldenImageMinTokens
                                               : 0;
  eo.image_max_tokens = o.image_max_tokens > 0 ? o.image_max_tokens
                        : golden               ? kGoldenImageMaxTokens
                                               : 0;
  return eo;
}

QualityPrompt image_prompt(const std::string& name, const std::string& question, int w, int h,
                           int variant) {
  QualityPrompt p;
  p.name = name;
  p.request.messages.push_back(
      {"user",
       false,
       {{ContentPart::Kind::kImage, "", 0}, {ContentPart::Kind::kText, question, -1}}});
  p.request.images.push_back({encode_bmp(synthetic_scene(w, h, variant)), 0, 0});
  return p;
}

// Two questions about drawn pictures (196 and 192 image tokens at the default budget); the
// continuation is what the exact model answers greedily.
std::vector<QualityPrompt> builtin_prompts(Engine& exact, int64_t continuation_tokens) {
  std::vector<QualityPrompt> prompts = {
      image_prompt("describe_448x448", "Describe this image in detail.", 448, 448, 0),
      image_prompt("shapes_512x384", "Which shapes and colours are in this picture?", 512, 384, 1)};
  for (QualityPrompt& p : prompts) {
    GenerationRequest req = p.request;
    req.sampling.temperature = 0;
    req.sampling.max_tokens = continuation_tokens;
    p.continuation = exact.generate(req).completion_ids;
  }
  return prompts;
}

json stats_json(const AgreementStats& s) {
  return {{"positions", s.positions},
          {"top1_agreement", s.top1_rate()},
          {"mean_kl", s.mean_kl()},
          {"max_kl", s.kl_max},
          {"max_abs_logit_diff", s.max_abs_diff},
          {"min_reference_margin", s.min_reference_margin},
          {"mean_reference_entropy", s.mean_reference_entropy()}};
}

json images_json(const ImageAgreement& a) {
  return {
      {"image_tokens", a.tokens}, {"min_cosine", a.min_cosine}, {"mean_cosine", a.mean_cosine()}};
}

json report_json(const std::string& quant, const std::string& vision_quant, const QualityReport& r,
                 double load_ms, double score_ms) {
  json j = {{"quant", quant},
            {"vision_quant", vision_quant},
            {"load_ms", load_ms},
            {"score_ms", score_ms}};
  j["total"] = stats_json(r.total);
  j["image_embeddings"] = images_json(r.images);
  j["keeps_greedy_tokens"] = r.keeps_greedy_tokens();
  j["prompts"] = json::array();
  for (const PromptAgreement& p : r.prompts) {
    json row = stats_json(p.stats);
    row["name"] = p.name;
    row["greedy_prefix"] = p.greedy_prefix;
    row["continuation_top1"] = p.continuation_top1;
    row["continuation_tokens"] = p.continuation_length;
    row["image_embeddings"] = images_json(p.images);
    j["prompts"].push_back(row);
  }
  return j;
}

void print_row(const std::string& name, const AgreementStats& s, const ImageAgreement& img,
               int64_t kept, int64_t of) {
  std::printf("  %-18s %9lld %8.2f %11.3e %11.3e %12.4f %11.4f %8lld/%-4lld", name.c_str(),
              static_cast<long long>(s.positions), 100.0 * s.top1_rate(), s.mean_kl(), s.kl_max,
              s.max_abs_diff, s.min_reference_margin, static_cast<long long>(kept),
              static_cast<long long>(of));
  if (img.tokens > 0) {
    std::printf(" %10.6f %10.6f\n", img.min_cosine, img.mean_cosine());
  } else {
    std::printf(" %10s %10s\n", "-", "-");
  }
}

void print_report(const json& type, const QualityReport& r) {
  std::printf("\n%s (vision %s, KV %s) vs exact (load %.1f s, scoring %.1f s)\n",
              type["quant"].get<std::string>().c_str(),
              type["vision_quant"].get<std::string>().c_str(),
              type["kv_type"].get<std::string>().c_str(), type["load_ms"].get<double>() / 1000,
              type["score_ms"].get<double>() / 1000);
  // min margin: the smallest top1 - top2 logit gap of exact. Where it is below max |dlogit| a
  // top-1 flip is expected, and says as much about the (undecided) model as about the weights.
  // img cos: cosine similarity of the image embeddings (vision tower output) per image token.
  std::printf("  %-18s %9s %8s %11s %11s %12s %11s %13s %10s %10s\n", "prompt", "positions",
              "top-1 %", "mean KL", "max KL", "max |dlogit|", "min margin", "greedy kept",
              "img cos min", "mean");
  int64_t kept = 0, of = 0;
  for (const PromptAgreement& p : r.prompts) {
    print_row(p.name, p.stats, p.images, p.greedy_prefix, p.continuation_length);
    kept += p.greedy_prefix;
    of += p.continuation_length;
  }
  print_row("all", r.total, r.images, kept, of);
}

void quality(const QualityOptions& o) {
  if (o.continuation_tokens < 1) fail(ErrorCode::kInvalidArgument, "--tokens must be at least 1");
  const std::string dir = hub::resolve_model(o.model, {});
  json out = {{"model", dir}, {"reference", "exact"}};

  // Golden cases are read first so that a bad folder fails before any model is loaded.
  std::vector<QualityPrompt> prompts;
  if (!o.golden.empty()) prompts = golden_quality_prompts(o.golden);
  ReferenceLogits reference;
  {
    const Timer t;
    auto exact = Engine::load(engine_options(o, dir, "exact"));
    if (o.golden.empty()) prompts = builtin_prompts(*exact, o.continuation_tokens);
    reference = ReferenceLogits::record(*exact, prompts);
    out["reference_ms"] = t.millis();
  }
  out["prompts"] = json::array();
  for (size_t k = 0; k < prompts.size(); ++k) {
    out["prompts"].push_back({{"name", prompts[k].name},
                              {"prompt_tokens", reference.prompt_ids(k).size()},
                              {"images", prompts[k].request.images.size()},
                              {"continuation_tokens", prompts[k].continuation.size()}});
  }
  if (!o.json) {
    std::printf("qvl quality: %s, %zu prompts (%s), reference exact (%.1f s)\n", dir.c_str(),
                prompts.size(), o.golden.empty() ? "built-in, drawn images" : o.golden.c_str(),
                out["reference_ms"].get<double>() / 1000);
    for (const auto& p : out["prompts"]) {
      std::printf("  %-18s %5lld prompt tokens, %lld image(s), %lld continuation tokens\n",
                  p["name"].get<std::string>().c_str(), p["prompt_tokens"].get<long long>(),
                  p["images"].get<long long>(), p["continuation_tokens"].get<long long>());
    }
  }
  out["types"] = json::array();
  for (const std::string& quant : o.quants) {
    for (const std::string& vision : o.vision_quants) {
      if (quant == "exact" && !vision.empty() && vision != "bf16")
        continue;  // exact has one vision type
      // The 8-bit KV cache is also compared with the 16-bit one of the same weights.
      std::optional<ReferenceLogits> f16_kv;
      for (const std::string& kv : o.kv_types) {
        if (quant == "exact" && kv != o.kv_types.front()) continue;  // exact keeps fp32
        const Timer load;
        auto engine = Engine::load(engine_options(o, dir, quant, quant == "exact" ? "" : vision,
                                                  quant == "exact" ? "" : kv));
        const double load_ms = load.millis();
        const Timer scoring;
        const QualityReport r = measure_agreement(*engine, prompts, reference);
        json& type = out["types"].emplace_back(
            report_json(quant, engine->info().vision_weights, r, load_ms, scoring.millis()));
        type["lm_head"] = o.lm_head.empty() ? "default" : o.lm_head;
        type["kv_type"] = engine->info().kv_cache;
        if (quant != "exact" && kv == "f16" && o.kv_types.size() > 1) {
          f16_kv = ReferenceLogits::record(*engine, prompts);
        }
        if (quant != "exact" && kv == "q8" && f16_kv) {
          type["vs_f16_kv"] = stats_json(measure_agreement(*engine, prompts, *f16_kv).total);
        }
        if (!o.json) print_report(type, r);
        if (!o.json && type.contains("vs_f16_kv")) {
          const json& d = type["vs_f16_kv"];
          std::printf(
              "  8-bit KV against 16-bit KV (same weights): mean KL %.3g, max KL %.3g, "
              "top-1 agreement %.4f\n",
              d["mean_kl"].get<double>(), d["max_kl"].get<double>(),
              d["top1_agreement"].get<double>());
        }
        std::fflush(stdout);
      }
    }
  }
  if (o.json) std::puts(out.dump().c_str());
}

}  // namespace

void add_quality_command(CLI::App& app) {
  auto o = std::make_shared<QualityOptions>();
  CLI::App* cmd =
      app.add_subcommand("quality",
                         "Compare weight types with exact: top-1 agreement and KL of next-token "
                         "distributions, and cosine similarity of image embeddings");
  cmd->add_option("-m,--model", o->model, "Model folder or hub id")->required();
  cmd->add_option("--quant", o->quants, "Weight types to compare with exact, comma separated")
      ->delimiter(',')
      ->check(CLI::IsMember({"exact", "bf16", "q8", "q4"}))
      ->capture_default_str();
  cmd->add_option("--lm-head", o->lm_head,
                  "Output head type for the compared types: bf16, q8 or q4 (default: q8, bf16 "
                  "for bf16)")
      ->check(CLI::IsMember({"bf16", "q8", "q4"}));
  cmd->add_option("--vision-quant", o->vision_quants,
                  "Vision tower types to combine with each --quant, comma separated (default: "
                  "each --quant's own: q8 with q4, else bf16)")
      ->delimiter(',')
      ->check(CLI::IsMember({"bf16", "q8"}));
  cmd->add_option("--kv-type", o->kv_types,
                  "KV cache types to combine with each --quant, comma separated (q8 is also "
                  "compared with f16 when both are given)")
      ->delimiter(',')
      ->check(CLI::IsMember({"f16", "q8"}))
      ->capture_default_str();
  cmd->add_option("--golden", o->golden,
                  "Golden folder (manifest.json): its cases, continued by the golden greedy "
                  "tokens; default: built-in prompts with drawn images");
  cmd->add_option("--tokens", o->continuation_tokens,
                  "Continuation length for the built-in prompts (exact greedy output)")
      ->capture_default_str();
  cmd->add_option("--image-min-tokens", o->image_min_tokens,
                  "Fewest tokens per image (default 64)");
  cmd->add_option("--image-max-tokens", o->image_max_tokens,
                  "Most tokens per image (default 1024; 16384 with --golden)");
  cmd->add_option("--threads", o->threads, "Threads (default: physical cores)");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] { quality(*o); });
}

}  // namespace qvl::cli
