// Log-probabilities of generated tokens: the one-pass top-k against a sorted oracle, and on the
// tiny model against the exact log-softmax of Engine::score's logits (the model's raw
// distribution: temperature and penalties must not change the numbers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <random>

#include "base/error.h"
#include "engine/token_logprobs.h"
#include "qvl/engine.h"

namespace qvl {
namespace {

std::vector<double> exact_log_softmax(const float* logits, int64_t vocab) {
  double max = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) max = std::max(max, static_cast<double>(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(logits[i] - max);
  std::vector<double> out(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) out[i] = logits[i] - max - std::log(sum);
  return out;
}

TEST(StepLogprobs, MatchesSortedOracleWithTies) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(1000);
  for (float& x : logits) x = std::round(normal(rng) * 4) / 4;  // many exact ties
  const std::vector<double> exact = exact_log_softmax(logits.data(), 1000);
  std::vector<int64_t> order(1000);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  // The exponentials are float (ops::exp_sum): ~1e-7 relative per term, summed in double.
  constexpr double kTol = 1e-6;
  for (int64_t top : {0, 1, 5, 20}) {
    const StepLogprobs s = step_logprobs(logits.data(), 1000, 42, top);
    EXPECT_NEAR(s.chosen.logprob, exact[42], kTol);
    ASSERT_EQ(static_cast<int64_t>(s.top.size()), top);
    for (int64_t k = 0; k < top; ++k) {
      EXPECT_EQ(s.top[k].id, order[k]) << "rank " << k;  // ties: lower id first
      EXPECT_NEAR(s.top[k].logprob, exact[order[k]], kTol);
    }
  }
}

TEST(StepLogprobs, NanAndInfinityAndBadArguments) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> logits = {1.0f, std::nanf(""), -inf, 1.0f};
  const StepLogprobs s = step_logprobs(logits.data(), 4, 1, 4);
  EXPECT_EQ(s.chosen.logprob, -INFINITY);
  EXPECT_NEAR(s.top[0].logprob, std::log(0.5), 1e-12);
  EXPECT_EQ(s.top[0].id, 0);
  EXPECT_EQ(s.top[1].id, 3);
  EXPECT_EQ(s.top[3].logprob, -INFINITY);
  EXPECT_THROW(step_logprobs(logits.data(), 4, 4, 0), Error);
  EXPECT_THROW(step_logprobs(logits.data(), 4, 0, 21), Error);
  EXPECT_THROW(step_logprobs(logits.data(), 4, 0, -1), Error);
}

TEST(GenerateLogprobs, EqualExactLogSoftmaxOfScoreBeforeTemperatureAndPenalties) {
  EngineOptions o;
  o.model_dir = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";
  o.quant = "exact";
  const auto engine = Engine::load(o);
  GenerationRequest request;
  request.messages.push_back({"user", true, {{ContentPart::Kind::kText, "Name three birds.", -1}}});
  request.sampling.temperature = 1.3f;  // a sampled answer: logprobs still describe the model
  request.sampling.seed = 11;
  request.sampling.repetition_penalty = 1.5f;
  request.sampling.presence_penalty = 1.0f;
  request.sampling.max_tokens = 8;
  request.sampling.ignore_eos = true;
  request.top_logprobs = 5;
  std::vector<int64_t> streamed;
  std::string streamed_text;
  std::vector<std::string> text_at_logprobs;  // what on_text had delivered when each token's came
  request.on_logprobs = [&](const GeneratedTokenLogprobs& t) {
    streamed.push_back(t.token.id);
    text_at_logprobs.push_back(streamed_text);
  };
  const GenerationResult result = engine->generate(request, [&](const std::string& s) {
    streamed_text += s;
    return true;
  });
  ASSERT_EQ(result.completion_ids.size(), 8u);
  ASSERT_EQ(result.logprobs.size(), 8u);
  EXPECT_EQ(streamed, result.completion_ids);
  // A token's log-probability is its last callback: its text has been delivered by then (a
  // streamer sends both together, and a token without text at once).
  int checked = 0;
  for (size_t i = 0; i < 8; ++i) {
    const std::vector<int64_t> prefix(result.completion_ids.begin(),
                                      result.completion_ids.begin() + static_cast<int64_t>(i) + 1);
    const std::string decoded = engine->detokenize(prefix);
    if (decoded.find("\xEF\xBF\xBD") != std::string::npos) continue;  // bytes still held back
    EXPECT_EQ(text_at_logprobs[i], decoded) << "token " << i;
    checked += text_at_logprobs[i] != (i == 0 ? std::string() : text_at_logprobs[i - 1]);
  }
  EXPECT_GT(checked, 0) << "no token with text was checked";

  std::vector<std::vector<double>> exact;
  const ScoreResult scored =
      engine->score(request, result.completion_ids, [&](int64_t, const float* logits) {
        exact.push_back(exact_log_softmax(logits, engine->info().vocab_size));
      });
  ASSERT_EQ(exact.size(), 9u);
  constexpr double kTol = 2e-3;  // decode step vs one prompt pass: same math, other blocking
  for (size_t i = 0; i < 8; ++i) {
    const GeneratedTokenLogprobs& t = result.logprobs[i];
    EXPECT_EQ(t.token.id, result.completion_ids[i]);
    EXPECT_NEAR(t.token.logprob, scored.token_logprobs[i], kTol) << "token " << i;
    EXPECT_NEAR(t.token.logprob, exact[i][t.token.id], kTol);
    EXPECT_FALSE(t.token.bytes.empty());
    const std::string decoded = engine->detokenize({t.token.id});
    if (decoded.find("\xEF\xBF\xBD") == std::string::npos) {
      EXPECT_EQ(t.token.bytes, decoded);
    }
    ASSERT_EQ(t.top.size(), 5u);
    std::vector<double> sorted = exact[i];
    std::nth_element(sorted.begin(), sorted.begin() + 4, sorted.end(), std::greater<double>());
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_NEAR(t.top[k].logprob, exact[i][t.top[k].id], kTol) << "token " << i << " top " << k;
      EXPECT_GE(t.top[k].logprob, sorted[4] - kTol);  // a true top-5 member (up to near-ties)
      if (k > 0) {
        EXPECT_LE(t.top[k].logprob, t.top[k - 1].logprob);
      }
    }
  }
  // Without the request: no cost, no entries.
  request.top_logprobs = -1;
  EXPECT_TRUE(engine->generate(request).logprobs.empty());
  request.top_logprobs = 21;
  EXPECT_THROW(engine->generate(request), Error);
}

}  // namespace
}  // namespace qvl
