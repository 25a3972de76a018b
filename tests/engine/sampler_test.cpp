#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"

namespace qvl {
namespace {

const std::vector<int64_t> kNoIds;
constexpr float kInf = std::numeric_limits<float>::infinity();

SamplingParams seeded(uint64_t seed = 1234) {
  SamplingParams p;
  p.seed = seed;
  return p;
}

// Logits whose softmax is exactly `probs` (up to float rounding).
std::vector<float> logits_for(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  const double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p;
  for (float x : logits) p.push_back(std::exp((x - max) / temperature));
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& v : p) v /= total;
  return p;
}

std::vector<float> random_logits(int64_t vocab, float stddev, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> logits(vocab);
  for (float& x : logits) x = normal(rng);
  return logits;
}

std::map<int64_t, double> as_map(const std::vector<TokenProbability>& dist) {
  std::map<int64_t, double> m;
  for (const auto& t : dist) m[t.id] = t.probability;
  return m;
}

TEST(Sampler, GreedyPicksArgmaxWithLowestIdOnTies) {
  SamplingParams p = seeded();
  p.temperature = 0;
  Sampler sampler(p);
  std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f};
  EXPECT_EQ(sampler.sample(logits.data(), 5, kNoIds, kNoIds), 1);
  logits[4] = 3.5f;
  EXPECT_EQ(sampler.sample(logits.data(), 5, kNoIds, kNoIds), 4);
  auto dist = sampler.distribution(logits.data(), 5, kNoIds, kNoIds);
  ASSERT_EQ(dist.size(), 1u);
  EXPECT_EQ(dist[0].id, 4);
  EXPECT_EQ(dist[0].probability, 1.0);
}

TEST(Sampler, TopKOneIsGreedyAndNanIsNeverChosen) {
  SamplingParams p = seeded();
  p.top_k = 1;
  EXPECT_TRUE(is_greedy_sampling(p));
  Sampler sampler(p);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> logits = {nan, -2.0f, 1.0f, nan, 0.5f};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(sampler.sample(logits.data(), 5, kNoIds, kNoIds), 2);
}

TEST(Sampler, GreedyAppliesPenalties) {
  SamplingParams p = seeded();
  p.temperature = 0;
  p.repetition_penalty = 2.0f;
  Sampler sampler(p);
  std::vector<float> logits = {1.0f, 4.0f, 3.0f};
  EXPECT_EQ(sampler.sample(logits.data(), 3, {1}, kNoIds), 2);  // 4 / 2 = 2 < 3
  EXPECT_EQ(logits[1], 4.0f) << "the caller's logits must not be modified";
}

TEST(Sampler, TemperatureFrequenciesMatchSoftmax) {
  const std::vector<float> logits = {1.0f, 0.5f, 2.0f, -1.0f, 0.0f, 1.5f, -0.5f, 0.2f};
  const int64_t vocab = static_cast<int64_t>(logits.size());
  for (float temperature : {0.7f, 1.0f, 1.8f}) {
    SamplingParams p = seeded(99);
    p.temperature = temperature;
    Sampler sampler(p);
    const std::vector<double> expected = softmax(logits, temperature);
    const auto dist = as_map(sampler.distribution(logits.data(), vocab, kNoIds, kNoIds));
    ASSERT_EQ(dist.size(), logits.size());
    for (int64_t i = 0; i < vocab; ++i) EXPECT_NEAR(dist.at(i), expected[i], 1e-6);

    const int draws = 100000;
    std::vector<int> counts(vocab, 0);
    for (int i = 0; i < draws; ++i) ++counts[sampler.sample(logits.data(), vocab, kNoIds, kNoIds)];
    double chi_square = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      const double e = expected[i] * draws;
      chi_square += (counts[i] - e) * (counts[i] - e) / e;
    }
    // 7 degrees of freedom: P(chi2 > 24.32) = 0.001 for a correct sampler.
    EXPECT_LT(chi_square, 24.32) << "temperature " << temperature;
    EXPECT_GT(chi_square, 0.0);
  }
}

// Chi-square critical value at p = 0.001 (Wilson-Hilferty approximation).
double chi_square_limit(double dof) {
  const double z = 3.09;
  const double a = 2.0 / (9.0 * dof);
  return dof * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// Sampling from hundreds of tokens (the draw skips blocks of candidates) must follow
// distribution(), with and without filters.
TEST(Sampler, DrawsFollowTheDistributionOnLargerVocabularies) {
  const int64_t vocab = 300;
  const std::vector<float> logits = random_logits(vocab, 0.6f, 21);
  for (float top_p : {1.0f, 0.8f}) {
    SamplingParams p = seeded(5);
    p.temperature = 0.9f;
    p.top_p = top_p;
    p.min_p = top_p < 1 ? 0.2f : 0.0f;
    Sampler sampler(p);
    const auto expected = as_map(sampler.distribution(logits.data(), vocab, kNoIds, kNoIds));
    const int draws = 40000;
    std::map<int64_t, int> counts;
    for (int i = 0; i < draws; ++i) ++counts[sampler.sample(logits.data(), vocab, kNoIds, kNoIds)];
    double chi_square = 0;
    for (const auto& [id, prob] : expected) {
      const double e = prob * draws;
      const double c = counts.count(id) ? counts.at(id) : 0;
      chi_square += (c - e) * (c - e) / e;
    }
    for (const auto& [id, c] : counts) ASSERT_TRUE(expected.count(id)) << id;
    EXPECT_LT(chi_square, chi_square_limit(static_cast<double>(expected.size() - 1)))
        << "top_p " << top_p << ", " << expected.size() << " tokens";
  }
}

// Probabilities spanning e^-80..1 keep their relative accuracy (the weights use a fast exp).
TEST(Sampler, ProbabilitiesAreAccurateOverAWideRange) {
  std::vector<float> logits;
  for (int i = 0; i < 200; ++i) logits.push_back(-0.4f * static_cast<float>(i) + 3.0f);
  logits.push_back(-90.0f);  // underflows: dropped
  SamplingParams p = seeded();
  Sampler sampler(p);
  const auto m = as_map(sampler.distribution(logits.data(), 201, kNoIds, kNoIds));
  const std::vector<double> expected = softmax(logits, 1.0);
  ASSERT_EQ(m.size(), 200u);
  for (int64_t i = 0; i < 200; ++i) EXPECT_NEAR(m.at(i) / expected[i], 1.0, 1e-6) << i;
}

TEST(Sampler, NanIsNeverSampled) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> logits = {nan, 0.0f, -nan, 0.5f, nan, -1.0f};
  for (int64_t top_k : {0, 2, 600}) {
    SamplingParams p = seeded();
    p.top_k = top_k;
    p.top_p = 0.99f;
    Sampler sampler(p);
    std::set<int64_t> seen;
    for (int i = 0; i < 300; ++i) seen.insert(sampler.sample(logits.data(), 6, kNoIds, kNoIds));
    EXPECT_EQ(seen, (top_k == 2 ? std::set<int64_t>{1, 3} : std::set<int64_t>{1, 3, 5}));
  }
}

TEST(Sampler, TopKOnlyReturnsTheKBest) {
  const int64_t vocab = 1000;
  const std::vector<float> logits = random_logits(vocab, 2.0f, 7);
  std::vector<int64_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  for (int64_t k : {5, 600}) {  // heap path and nth_element path
    SamplingParams p = seeded();
    p.top_k = k;
    p.temperature = 0.8f;
    Sampler sampler(p);
    const std::set<int64_t> best(order.begin(), order.begin() + k);
    const auto dist = sampler.distribution(logits.data(), vocab, kNoIds, kNoIds);
    ASSERT_EQ(dist.size(), static_cast<size_t>(k));
    std::vector<float> kept_logits;
    for (int64_t id : order) {
      if (best.count(id)) kept_logits.push_back(logits[id]);
    }
    const std::vector<double> expected = softmax(kept_logits, 0.8);
    const auto m = as_map(dist);
    for (int64_t j = 0; j < k; ++j) EXPECT_NEAR(m.at(order[j]), expected[j], 1e-6);
    std::set<int64_t> seen;
    for (int i = 0; i < 3000; ++i) {
      const int64_t id = sampler.sample(logits.data(), vocab, kNoIds, kNoIds);
      ASSERT_TRUE(best.count(id)) << id;
      seen.insert(id);
    }
    if (k == 5) {
      EXPECT_EQ(seen.size(), 5u);
    }
  }
}

TEST(Sampler, TopKKeepsTiesAtTheThresholdLikeTransformers) {
  SamplingParams p = seeded();
  p.top_k = 2;
  Sampler sampler(p);
  const std::vector<float> logits = {3.0f, 1.0f, 3.0f, 3.0f, 0.0f};
  const auto m = as_map(sampler.distribution(logits.data(), 5, kNoIds, kNoIds));
  ASSERT_EQ(m.size(), 3u);
  for (int64_t id : {0, 2, 3}) EXPECT_NEAR(m.at(id), 1.0 / 3, 1e-9);
}

TEST(Sampler, TopPKeepsExactlyTheNucleus) {
  // Ids are shuffled relative to probability so that order of ids does not help.
  const std::vector<float> logits = logits_for({0.2, 0.4, 0.1, 0.3});
  struct Case {
    float top_p;
    std::map<int64_t, double> expected;
  };
  const std::vector<Case> cases = {
      {0.01f, {{1, 1.0}}},
      {0.39f, {{1, 1.0}}},
      {0.41f, {{1, 4.0 / 7}, {3, 3.0 / 7}}},
      {0.65f, {{1, 4.0 / 7}, {3, 3.0 / 7}}},
      {0.75f, {{1, 4.0 / 9}, {3, 3.0 / 9}, {0, 2.0 / 9}}},
      {0.95f, {{1, 0.4}, {3, 0.3}, {0, 0.2}, {2, 0.1}}},
  };
  for (const Case& c : cases) {
    SamplingParams p = seeded();
    p.top_p = c.top_p;
    Sampler sampler(p);
    const auto m = as_map(sampler.distribution(logits.data(), 4, kNoIds, kNoIds));
    ASSERT_EQ(m.size(), c.expected.size()) << "top_p " << c.top_p;
    for (const auto& [id, prob] : c.expected) EXPECT_NEAR(m.at(id), prob, 1e-6);
    for (int i = 0; i < 500; ++i)
      ASSERT_TRUE(c.expected.count(sampler.sample(logits.data(), 4, kNoIds, kNoIds)));
  }
}

// Full vocabulary, flat and peaked logits: the pruned search must find the same set as a
// full sort (this exercises the several cutoff rounds).
TEST(Sampler, TopPMatchesFullSortOnLargeVocab) {
  const int64_t vocab = 151936;
  for (float stddev : {1.0f, 6.0f}) {
    const std::vector<float> logits = random_logits(vocab, stddev, 11);
    const float max = *std::max_element(logits.begin(), logits.end());
    std::vector<std::pair<float, int64_t>> weights;
    double total = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      const float w = std::exp((logits[i] - max) / 0.7f);
      weights.push_back({w, i});
      total += w;
    }
    std::sort(weights.begin(), weights.end(), [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    for (float top_p : {0.05f, 0.5f, 0.9f, 0.99f}) {
      SamplingParams p = seeded();
      p.top_p = top_p;
      p.temperature = 0.7f;
      Sampler sampler(p);
      const auto dist = sampler.distribution(logits.data(), vocab, kNoIds, kNoIds);

      size_t nucleus = 0;
      double mass = 0;
      while (nucleus < weights.size() && mass < top_p * total) mass += weights[nucleus++].first;
      ASSERT_EQ(dist.size(), nucleus) << "stddev " << stddev << " top_p " << top_p;
      for (size_t j = 0; j < nucleus; ++j) EXPECT_EQ(dist[j].id, weights[j].second);
    }
  }
}

TEST(Sampler, MinPDropsTokensBelowFractionOfTheBest) {
  const std::vector<float> logits = logits_for({0.04, 0.5, 0.1, 0.2, 0.16});
  SamplingParams p = seeded();
  p.min_p = 0.25f;  // keep p >= 0.125
  Sampler sampler(p);
  const auto m = as_map(sampler.distribution(logits.data(), 5, kNoIds, kNoIds));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_NEAR(m.at(1), 0.5 / 0.86, 1e-6);
  EXPECT_NEAR(m.at(3), 0.2 / 0.86, 1e-6);
  EXPECT_NEAR(m.at(4), 0.16 / 0.86, 1e-6);
  for (int i = 0; i < 500; ++i) {
    const int64_t id = sampler.sample(logits.data(), 5, kNoIds, kNoIds);
    ASSERT_TRUE(id == 1 || id == 3 || id == 4) << id;
  }
}

TEST(Sampler, FiltersApplyInTransformersOrder) {
  const std::vector<float> logits = logits_for({0.1, 0.4, 0.3, 0.2});
  // top_p alone: 0.4 before token 2, < 0.5, so two tokens stay.
  SamplingParams p = seeded();
  p.top_p = 0.5f;
  EXPECT_EQ(Sampler(p).distribution(logits.data(), 4, kNoIds, kNoIds).size(), 2u);
  // top_k first renormalises to {4/7, 3/7}: 4/7 >= 0.5, so top_p keeps one token.
  p.top_k = 2;
  auto dist = Sampler(p).distribution(logits.data(), 4, kNoIds, kNoIds);
  ASSERT_EQ(dist.size(), 1u);
  EXPECT_EQ(dist[0].id, 1);
  // Temperature comes before top_p: at T=5 the distribution flattens and top_p 0.5 needs 2
  // tokens out of the top 3 (weights 0.4^0.2 : 0.3^0.2 : 0.2^0.2 ~ 0.35 : 0.33 : 0.31).
  p.top_k = 3;
  p.temperature = 5.0f;
  EXPECT_EQ(Sampler(p).distribution(logits.data(), 4, kNoIds, kNoIds).size(), 2u);
  p.temperature = 0.2f;  // sharp: 0.4^5 / (0.4^5 + 0.3^5 + 0.2^5) ~ 0.78 alone reaches 0.5
  EXPECT_EQ(Sampler(p).distribution(logits.data(), 4, kNoIds, kNoIds).size(), 1u);
}

TEST(Sampler, PenaltiesChangeLogitsExactly) {
  SamplingParams p = seeded();
  p.repetition_penalty = 1.5f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler sampler(p);
  std::vector<float> logits = {2.0f, -2.0f, 3.0f, -1.0f, 0.75f, 1.0f};
  const std::vector<int64_t> prompt = {0, 1, 0, 1, 1};
  const std::vector<int64_t> generated = {2, 3, 2, 2, 0};
  sampler.apply_penalties(logits.data(), 6, prompt, generated);
  // token 0: prompt and generated once -> repetition once, then presence + 1 * frequency.
  EXPECT_FLOAT_EQ(logits[0], 2.0f / 1.5f - (0.5f + 0.25f));
  // token 1: prompt only -> repetition (negative: multiplied), no presence/frequency.
  EXPECT_FLOAT_EQ(logits[1], -2.0f * 1.5f);
  // token 2: generated three times.
  EXPECT_FLOAT_EQ(logits[2], 3.0f / 1.5f - (0.5f + 3 * 0.25f));
  // token 3: generated once, negative.
  EXPECT_FLOAT_EQ(logits[3], -1.0f * 1.5f - (0.5f + 0.25f));
  // tokens 4, 5: untouched.
  EXPECT_EQ(logits[4], 0.75f);
  EXPECT_EQ(logits[5], 1.0f);
  // Scratch state is cleared between calls: the same call gives the same change again.
  std::vector<float> again = {2.0f, -2.0f, 3.0f, -1.0f, 0.75f, 1.0f};
  sampler.apply_penalties(again.data(), 6, prompt, generated);
  EXPECT_EQ(again, logits);
}

TEST(Sampler, NegativePenaltiesEncourageRepeats) {
  SamplingParams p = seeded();
  p.presence_penalty = -2.0f;
  p.frequency_penalty = -1.0f;
  Sampler sampler(p);
  std::vector<float> logits = {0.0f, 0.0f};
  sampler.apply_penalties(logits.data(), 2, {1}, {0, 0});
  EXPECT_FLOAT_EQ(logits[0], 4.0f);
  EXPECT_EQ(logits[1], 0.0f);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  const std::vector<float> logits = random_logits(5000, 1.0f, 3);
  auto run = [&](uint64_t seed) {
    SamplingParams p = seeded(seed);
    p.top_p = 0.95f;
    p.top_k = 200;
    Sampler sampler(p);
    std::vector<int64_t> tokens;
    for (int i = 0; i < 100; ++i)
      tokens.push_back(sampler.sample(logits.data(), 5000, kNoIds, tokens));
    return tokens;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
  SamplingParams p;  // no seed: a random one, reported
  EXPECT_NE(Sampler(p).seed(), Sampler(p).seed());
}

TEST(Sampler, PositiveInfinityTakesAllTheMass) {
  SamplingParams p = seeded();
  Sampler sampler(p);
  const std::vector<float> logits = {1.0f, kInf, 2.0f, kInf};
  std::set<int64_t> seen;
  for (int i = 0; i < 200; ++i) seen.insert(sampler.sample(logits.data(), 4, kNoIds, kNoIds));
  EXPECT_EQ(seen, (std::set<int64_t>{1, 3}));
}

TEST(Sampler, BadInputThrows) {
  Sampler sampler(seeded());
  std::vector<float> logits = {0.0f, 1.0f};
  try {
    sampler.sample(logits.data(), 2, {0, 2}, kNoIds);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_THROW(sampler.sample(logits.data(), 2, kNoIds, {-1}), Error);
  EXPECT_THROW(sampler.sample(nullptr, 2, kNoIds, kNoIds), Error);
  EXPECT_THROW(sampler.sample(logits.data(), 0, kNoIds, kNoIds), Error);
  std::vector<float> dead = {-kInf, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_THROW(sampler.sample(dead.data(), 2, kNoIds, kNoIds), Error);
  // The sampler still works after a rejected call.
  EXPECT_EQ(Sampler([] {
              SamplingParams p;
              p.temperature = 0;
              return p;
            }())
                .sample(logits.data(), 2, {0, 1}, {1}),
            1);
}

TEST(Sampler, InvalidParametersAreRejectedByName) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    const char* name;
    void (*change)(SamplingParams&, float);
    float value;
  };
  const std::vector<Case> cases = {
      {"temperature", [](SamplingParams& p, float v) { p.temperature = v; }, -0.1f},
      {"temperature", [](SamplingParams& p, float v) { p.temperature = v; }, kInf},
      {"temperature", [](SamplingParams& p, float v) { p.temperature = v; }, nan},
      {"top_p", [](SamplingParams& p, float v) { p.top_p = v; }, 0.0f},
      {"top_p", [](SamplingParams& p, float v) { p.top_p = v; }, 1.01f},
      {"top_p", [](SamplingParams& p, float v) { p.top_p = v; }, nan},
      {"top_k", [](SamplingParams& p, float v) { p.top_k = static_cast<int64_t>(v); }, -1.0f},
      {"min_p", [](SamplingParams& p, float v) { p.min_p = v; }, -0.5f},
      {"min_p", [](SamplingParams& p, float v) { p.min_p = v; }, 1.5f},
      {"repetition_penalty", [](SamplingParams& p, float v) { p.repetition_penalty = v; }, 0.0f},
      {"repetition_penalty", [](SamplingParams& p, float v) { p.repetition_penalty = v; }, nan},
      {"presence_penalty", [](SamplingParams& p, float v) { p.presence_penalty = v; }, 2.5f},
      {"frequency_penalty", [](SamplingParams& p, float v) { p.frequency_penalty = v; }, -2.5f},
  };
  for (const Case& c : cases) {
    SamplingParams p;
    c.change(p, c.value);
    try {
      Sampler sampler(p);
      ADD_FAILURE() << c.name << " = " << c.value << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(c.name), std::string::npos) << e.what();
    }
  }
  SamplingParams edge;  // boundaries are allowed
  edge.temperature = 0;
  edge.top_p = 1;
  edge.min_p = 1;
  edge.presence_penalty = -2;
  edge.frequency_penalty = 2;
  edge.top_k = 0;
  EXPECT_NO_THROW(validate_sampling(edge));
}

}  // namespace
}  // namespace qvl
