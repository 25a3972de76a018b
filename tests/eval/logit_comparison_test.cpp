#include "eval/logit_comparison.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace qvl {
namespace {

TEST(CompareLogits, IdenticalAndShiftedDistributionsHaveZeroKl) {
  const std::vector<float> a = {1.0f, 3.0f, -2.0f, 0.5f};
  std::vector<float> shifted = a;
  for (float& x : shifted) x += 7.0f;  // same softmax
  const LogitComparison same = compare_logits(a.data(), a.data(), 4);
  EXPECT_EQ(same.kl, 0.0);
  EXPECT_TRUE(same.top1_agrees());
  EXPECT_EQ(same.reference_top1, 1);
  const LogitComparison shift = compare_logits(a.data(), shifted.data(), 4);
  EXPECT_NEAR(shift.kl, 0.0, 1e-12);
  EXPECT_NEAR(shift.max_abs_diff, 7.0, 1e-6);
}

TEST(CompareLogits, KlMatchesTheDefinitionAndIsDirected) {
  // p = softmax(log 0.75, log 0.25) = (0.75, 0.25); q = (0.5, 0.5).
  const std::vector<float> p = {std::log(0.75f), std::log(0.25f)};
  const std::vector<float> q = {0.0f, 0.0f};
  const double want_pq = 0.75 * std::log(0.75 / 0.5) + 0.25 * std::log(0.25 / 0.5);
  const double want_qp = 0.5 * std::log(0.5 / 0.75) + 0.5 * std::log(0.5 / 0.25);
  EXPECT_NEAR(compare_logits(p.data(), q.data(), 2).kl, want_pq, 1e-7);
  EXPECT_NEAR(compare_logits(q.data(), p.data(), 2).kl, want_qp, 1e-7);
}

TEST(CompareLogits, DescribesHowDecidedTheReferenceIs) {
  const std::vector<float> p = {0.0f, 2.5f, 1.0f, 2.0f};
  const LogitComparison c = compare_logits(p.data(), p.data(), 4);
  EXPECT_NEAR(c.reference_margin, 0.5, 1e-6);
  double z = 0, h = 0;
  for (float x : p) z += std::exp(static_cast<double>(x));
  for (double x : p) h -= std::exp(x) / z * (x - std::log(z));
  EXPECT_NEAR(c.reference_entropy, h, 1e-9);
  const std::vector<float> uniform(8, 3.0f);
  const LogitComparison u = compare_logits(uniform.data(), uniform.data(), 8);
  EXPECT_NEAR(u.reference_entropy, std::log(8.0), 1e-9);
  EXPECT_EQ(u.reference_margin, 0.0);
}

TEST(CompareLogits, FlippedArgmaxDisagrees) {
  const std::vector<float> a = {2.0f, 1.9f, 0.0f};
  const std::vector<float> b = {1.9f, 2.0f, 0.0f};
  const LogitComparison c = compare_logits(a.data(), b.data(), 3);
  EXPECT_FALSE(c.top1_agrees());
  EXPECT_EQ(c.reference_top1, 0);
  EXPECT_EQ(c.candidate_top1, 1);
  EXPECT_GT(c.kl, 0.0);
}

TEST(CompareLogits, BrokenCandidateGivesInfiniteKl) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a = {1.0f, 2.0f, 3.0f};
  const std::vector<float> with_nan = {1.0f, nan, 3.0f};
  const std::vector<float> with_minus_inf = {-inf, 2.0f, 3.0f};
  EXPECT_TRUE(std::isinf(compare_logits(a.data(), with_nan.data(), 3).kl));
  EXPECT_TRUE(std::isinf(compare_logits(a.data(), with_nan.data(), 3).max_abs_diff));
  EXPECT_TRUE(std::isinf(compare_logits(a.data(), with_minus_inf.data(), 3).kl));
  // The other way round the impossible token carries no reference mass: finite KL.
  EXPECT_TRUE(std::isfinite(compare_logits(with_minus_inf.data(), a.data(), 3).kl));
}

TEST(AgreementStats, AccumulatesAndMerges) {
  AgreementStats s;
  EXPECT_EQ(s.top1_rate(), 1.0);
  EXPECT_EQ(s.mean_kl(), 0.0);
  LogitComparison agree{0.1, 3, 3, 0.5, 1.5, 2.0};
  LogitComparison disagree{0.3, 3, 4, 2.0, 0.25, 4.0};
  s.add(agree);
  s.add(disagree);
  EXPECT_EQ(s.positions, 2);
  EXPECT_EQ(s.top1_matches, 1);
  EXPECT_NEAR(s.mean_kl(), 0.2, 1e-12);
  EXPECT_EQ(s.kl_max, 0.3);
  EXPECT_EQ(s.max_abs_diff, 2.0);
  EXPECT_EQ(s.min_reference_margin, 0.25);
  EXPECT_NEAR(s.mean_reference_entropy(), 3.0, 1e-12);
  AgreementStats t;
  t.add(agree);
  t.merge(s);
  EXPECT_EQ(t.positions, 3);
  EXPECT_NEAR(t.top1_rate(), 2.0 / 3, 1e-12);
  EXPECT_NEAR(t.mean_kl(), 0.5 / 3, 1e-12);
  EXPECT_EQ(t.min_reference_margin, 0.25);
  t.merge(AgreementStats{});  // nothing to add: the margin must not drop to 0
  EXPECT_EQ(t.min_reference_margin, 0.25);
  EXPECT_EQ(t.positions, 3);
}

}  // namespace
}  // namespace qvl
