#include "engine/scoring.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace qvl {
namespace {

TEST(LogSumExp, MatchesDirectSumAndSurvivesLargeLogits) {
  const std::vector<float> v = {0.5f, -1.0f, 2.0f};
  EXPECT_NEAR(log_sum_exp(v.data(), 3), std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0)),
              1e-12);
  const std::vector<float> big = {1000.0f, 1000.0f};
  EXPECT_NEAR(log_sum_exp(big.data(), 2), 1000.0 + std::log(2.0), 1e-9);
}

TEST(LogSumExp, DegenerateRowsGiveTheirMaximum) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> all_minus_inf = {-inf, -inf};
  EXPECT_EQ(log_sum_exp(all_minus_inf.data(), 2), -std::numeric_limits<double>::infinity());
  const std::vector<float> with_inf = {1.0f, inf};
  EXPECT_EQ(log_sum_exp(with_inf.data(), 2), std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace qvl
