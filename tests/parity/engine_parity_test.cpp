// End to end through the public API: conversation + image files in, prompt ids and greedy
// tokens out, equal to the goldens (chat template, tokenizer, image decode and preprocessing,
// vision, prompt assembly, decoding all together).
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "base/mapped_file.h"
#include "golden.h"
#include "qvl/engine.h"

namespace qvl::testing {
namespace {

Engine& engine() {
  static std::unique_ptr<Engine> e = [] {
    EngineOptions o;
    o.model_dir = golden_dir();
    o.quant = "exact";
    o.image_min_tokens = 64;  // the reference processor's defaults (65536..16777216 px)
    o.image_max_tokens = 16384;
    return Engine::load(o);
  }();
  return *e;
}

// The golden text decodes every generated id, special ones included; the engine's text leaves
// special tokens out, and the greedy request runs past end-of-sequence. So a golden run that
// generates <|im_end|> or <|endoftext|> has their text where the engine has none.
std::string text_without_end_markers(std::string text) {
  for (const std::string marker : {"<|im_end|>", "<|endoftext|>"}) {
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
      text.erase(at, marker.size());
    }
  }
  return text;
}

void check_prompt_ids_and_greedy_tokens(const std::string& case_name) {
  GoldenCase c;
  for (auto& g : load_golden_cases())
    if (g.name == case_name) c = g;
  ASSERT_FALSE(c.name.empty());
  const GenerationResult r = engine().generate(greedy_request(c));
  EXPECT_EQ(r.prompt_ids, c.i64("input_ids"));
  const auto want = c.i64("gen.tokens");
  const auto margins = c.f32("gen.step_margin");
  ASSERT_EQ(r.completion_ids.size(), want.size());
  for (size_t s = 0; s < want.size() && margins[s] >= 1e-3f; ++s) {
    EXPECT_EQ(r.completion_ids[s], want[s]) << "step " << s;
  }
  EXPECT_EQ(r.text, text_without_end_markers(c.manifest["generated_text"].get<std::string>()));
}

TEST(EngineParity, PromptIdsAndGreedyTokens) {
  for_each_golden_case(check_prompt_ids_and_greedy_tokens);
}

// The same case again on the same engine: every prompt position but the last comes from the
// prefix cache (and the images from the image cache), and the greedy tokens stay the golden ones.
void check_prefix_reuse_keeps_the_greedy_tokens(const std::string& case_name) {
  GoldenCase c;
  for (auto& g : load_golden_cases())
    if (g.name == case_name) c = g;
  ASSERT_FALSE(c.name.empty());
  engine().generate(greedy_request(c));
  const GenerationResult r = engine().generate(greedy_request(c));
  EXPECT_EQ(r.stats.cached_tokens, r.stats.prompt_tokens - 1);
  EXPECT_EQ(r.prompt_ids, c.i64("input_ids"));
  const auto want = c.i64("gen.tokens");
  const auto margins = c.f32("gen.step_margin");
  ASSERT_EQ(r.completion_ids.size(), want.size());
  for (size_t s = 0; s < want.size() && margins[s] >= 1e-3f; ++s) {
    EXPECT_EQ(r.completion_ids[s], want[s]) << "step " << s;
  }
}

TEST(EngineParity, PrefixReuseKeepsTheGreedyTokens) {
  for_each_golden_case(check_prefix_reuse_keeps_the_greedy_tokens);
}

// Every golden case at once through one engine (continuous batching): each keeps its tokens.
TEST(EngineParityBatch, AllCasesTogetherKeepTheGreedyTokens) {
  EngineOptions o;
  o.model_dir = golden_dir();
  o.quant = "exact";
  o.image_min_tokens = 64;
  o.image_max_tokens = 16384;
  const auto batched = Engine::load(o);
  const auto cases = load_golden_cases();
  std::vector<GenerationResult> results(cases.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cases.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = batched->generate(greedy_request(cases[i])); });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    const auto want = cases[i].i64("gen.tokens");
    const auto margins = cases[i].f32("gen.step_margin");
    ASSERT_EQ(results[i].completion_ids.size(), want.size());
    for (size_t s = 0; s < want.size() && margins[s] >= 1e-3f; ++s) {
      EXPECT_EQ(results[i].completion_ids[s], want[s]) << "step " << s;
    }
  }
}

}  // namespace
}  // namespace qvl::testing
