// Engine::score (teacher forcing) against the goldens: with the golden greedy tokens as the
// continuation, exact mode reproduces the reference logits of the prefill and of every cached
// decode step, in one forward pass.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "base/error.h"
#include "eval/golden_prompts.h"
#include "golden.h"
#include "qvl/engine.h"

namespace qvl::testing {
namespace {

std::unique_ptr<Engine> load_exact(int64_t max_context = 0) {
  EngineOptions o;
  o.model_dir = golden_dir();
  o.quant = "exact";
  o.image_min_tokens = 64;  // the reference processor's budget, as the goldens used
  o.image_max_tokens = 16384;
  o.max_context = max_context;
  return Engine::load(o);
}

Engine& exact() {
  static std::unique_ptr<Engine> e = load_exact();
  return *e;
}

QualityPrompt prompt_named(const std::string& name) {
  for (auto& p : golden_quality_prompts(golden_dir()))
    if (p.name == name) return p;
  ADD_FAILURE() << "no golden case " << name;
  return {};
}

constexpr double kLogitTolerance = 1e-4;  // the goldens' suggested bound for fp32 logits

void check_teacher_forced_logits_match_golden_steps(const std::string& case_name) {
  GoldenCase c;
  for (auto& g : load_golden_cases())
    if (g.name == case_name) c = g;
  ASSERT_FALSE(c.name.empty());
  const QualityPrompt p = prompt_named(c.name);
  const auto tokens = c.i64("gen.tokens");
  ASSERT_EQ(p.continuation, tokens);
  const auto last = c.f32("logits.last");
  const auto probe_ids = c.i64("logits.probe_ids");
  const auto probe_vals = c.f32("gen.step_probe_vals");  // [steps, probes]
  const auto top5_ids = c.i64("gen.step_top5_ids");
  const auto top5_vals = c.f32("gen.step_top5_vals");
  const int64_t vocab = exact().info().vocab_size;
  ASSERT_EQ(static_cast<int64_t>(last.size()), vocab);

  int64_t calls = 0;
  const ScoreResult r = exact().score(p.request, tokens, [&](int64_t index, const float* row) {
    EXPECT_EQ(index, calls++);
    if (index == 0) {
      EXPECT_LE(max_abs_diff(row, last.data(), vocab), kLogitTolerance);
    }
    if (index >= static_cast<int64_t>(tokens.size())) return;  // beyond the golden steps
    for (size_t j = 0; j < probe_ids.size(); ++j) {
      EXPECT_NEAR(row[probe_ids[j]], probe_vals[index * probe_ids.size() + j], kLogitTolerance)
          << "step " << index << " probe " << probe_ids[j];
    }
    for (int j = 0; j < 5; ++j) {
      EXPECT_NEAR(row[top5_ids[index * 5 + j]], top5_vals[index * 5 + j], kLogitTolerance)
          << "step " << index << " top-5 rank " << j;
    }
  });
  EXPECT_EQ(calls, static_cast<int64_t>(tokens.size()) + 1);
  EXPECT_EQ(r.prompt_ids, c.i64("input_ids"));
  EXPECT_EQ(r.image_tokens, c.manifest["n_image_tokens"].get<int64_t>());
  ASSERT_EQ(r.token_logprobs.size(), tokens.size());
  for (double lp : r.token_logprobs) {
    EXPECT_TRUE(std::isfinite(lp));
    EXPECT_LT(lp, 0.0);
  }
}

TEST(ScoreParity, TeacherForcedLogitsMatchGoldenSteps) {
  for_each_golden_case(check_teacher_forced_logits_match_golden_steps);
}

TEST(Score, EmptyContinuationGivesTheNextTokenDistribution) {
  const QualityPrompt p = golden_quality_prompts(golden_dir()).front();
  int64_t calls = 0;
  const ScoreResult r = exact().score(p.request, {}, [&](int64_t, const float*) { ++calls; });
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(r.token_logprobs.empty());
  EXPECT_FALSE(r.prompt_ids.empty());
}

void expect_invalid(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Score, RejectsBadInputWithClearErrors) {
  const QualityPrompt p = golden_quality_prompts(golden_dir()).front();
  const int64_t vocab = exact().info().vocab_size;
  expect_invalid([&] { exact().score(p.request, {198, -1}); }, "outside the vocabulary");
  expect_invalid([&] { exact().score(p.request, {vocab}); }, "outside the vocabulary");
  expect_invalid([&] { exact().score(GenerationRequest{}, {198}); }, "messages");
  GenerationRequest bad_image = p.request;
  bad_image.messages[0].content_is_string = false;
  bad_image.messages[0].parts.push_back({ContentPart::Kind::kImage, "", 0});
  bad_image.images.push_back({{1, 2, 3}, 0, 0});
  EXPECT_THROW(exact().score(bad_image, {198}), Error);
  // A context of prompt + 3 holds a 3-token continuation but not a 4-token one.
  const int64_t n = static_cast<int64_t>(exact().score(p.request, {}).prompt_ids.size());
  auto small = load_exact(n + 3);
  EXPECT_EQ(small->score(p.request, {198, 198, 198}).token_logprobs.size(), 3u);
  expect_invalid([&] { small->score(p.request, {198, 198, 198, 198}); }, "context");
}

}  // namespace
}  // namespace qvl::testing
