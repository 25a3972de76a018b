// Activations and norms at every ISA level this CPU runs against the scalar references: lengths
// that leave vector tails, extreme and non-finite inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "isa_test_util.h"
#include "ops/activation.h"
#include "ops/elementwise_kernels.h"
#include "ops/norm.h"
#include "ops/packed_matrix.h"
#include "ops/softmax_stats.h"

namespace qvl::ops {
namespace {

using testing::available_isas;
using testing::IsaScope;
using testing::random_vector;

namespace ek = elementwise_kernels;

// Normal values, a sweep over [-20, 20], and the extremes.
std::vector<float> test_inputs(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = i % 3 == 0 ? -20.0f + 40.0f * static_cast<float>(i) / static_cast<float>(n) : dist(rng);
  }
  const float extremes[] = {20.0f,  -20.0f, 0.0f,   -0.0f, 1e-8f,
                            -1e-8f, 90.0f,  -90.0f, 1e30f, -1e30f};
  for (size_t i = 0; i < std::size(extremes) && i < v.size(); ++i)
    v[i * 7 % v.size()] = extremes[i];
  return v;
}

// |got - want| <= tol * max(1, |want|); both NaN or equal infinities also match.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
    } else {
      EXPECT_LE(std::fabs(got[i] - want[i]), tol * std::max(1.0f, std::fabs(want[i])))
          << what << " at " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

const int64_t kLengths[] = {1, 7, 8, 15, 16, 17, 33, 100, 1000, 70001};

TEST(Elementwise, EveryIsaOfTheCpuPassesTheSelfCheck) {
  for (IsaLevel isa : available_isas())
    EXPECT_TRUE(ek::kernels_verified(isa)) << isa_level_name(isa);
}

TEST(Activation, SiluMulMatchesReference) {
  for (IsaLevel isa : available_isas()) {
    for (int64_t n : kLengths) {
      auto gate = test_inputs(n, 1);
      gate[0] = INFINITY;
      if (n > 1) gate[1] = -INFINITY;
      const auto up = test_inputs(n, 2);
      std::vector<float> want(gate.size()), got(gate.size(), NAN);
      ek::silu_mul_reference(gate.data(), up.data(), n, want.data());
      IsaScope scope(isa);
      silu_mul(gate.data(), up.data(), n, got.data());
      expect_close(got, want, 1e-6f, std::string("silu_mul ") + isa_level_name(isa));
    }
  }
}

TEST(Activation, GeluTanhMatchesReference) {
  for (IsaLevel isa : available_isas()) {
    for (int64_t n : kLengths) {
      auto x = test_inputs(n, 3);
      x[0] = INFINITY;
      if (n > 1) x[1] = -INFINITY;  // NaN in torch too (-inf * 0)
      auto want = x, got = x;
      ek::gelu_tanh_reference(want.data(), n);
      IsaScope scope(isa);
      gelu_tanh(got.data(), n);
      expect_close(got, want, 1e-6f, std::string("gelu_tanh ") + isa_level_name(isa));
    }
  }
}

TEST(Activation, GeluErfMatchesReference) {
  for (IsaLevel isa : available_isas()) {
    for (int64_t n : kLengths) {
      auto want = test_inputs(n, 4), got = want;
      ek::gelu_erf_reference(want.data(), n);
      IsaScope scope(isa);
      gelu_erf(got.data(), n);
      expect_close(got, want, 1e-6f, std::string("gelu_erf ") + isa_level_name(isa));
    }
  }
}

// Logit-like rows (a vocabulary's worth too) with NaN and -inf entries, and the degenerate rows.
TEST(SoftmaxStats, ExpSumMatchesReference) {
  for (IsaLevel isa : available_isas()) {
    const std::string where = std::string(" at ") + isa_level_name(isa);
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{15}, int64_t{16}, int64_t{17},
                      int64_t{33}, int64_t{1000}, int64_t{151936}}) {
      std::vector<float> x = testing::random_vector(static_cast<size_t>(n), 9, 12.0f);
      if (n > 3) x[1] = NAN, x[2] = -INFINITY;
      const ExpSum want = ek::exp_sum_reference(x.data(), n);
      IsaScope scope(isa);
      const ExpSum got = exp_sum(x.data(), n);
      EXPECT_EQ(got.max, want.max) << n << where;
      EXPECT_NEAR(got.sum, want.sum, 1e-6 * want.sum) << n << where;
    }
    IsaScope scope(isa);
    const std::vector<float> none = {-INFINITY, NAN, -INFINITY};
    EXPECT_EQ(exp_sum(none.data(), 3).max, -INFINITY) << where;
    EXPECT_EQ(exp_sum(none.data(), 3).sum, 0.0) << where;
    const std::vector<float> huge = {1.0f, INFINITY, 2.0f};
    EXPECT_EQ(exp_sum(huge.data(), 3).max, INFINITY) << where;
    EXPECT_EQ(exp_sum(huge.data(), 3).sum, 0.0) << where;
    // Terms far below the max vanish rather than turning into NaN or garbage.
    const std::vector<float> spread = {0.0f, -200.0f, -1e30f, -90.0f, 0.0f};
    EXPECT_NEAR(exp_sum(spread.data(), 5).sum, 2.0, 1e-12) << where;
  }
}

TEST(Norm, RmsNormAndLayerNormMatchReference) {
  for (IsaLevel isa : available_isas()) {
    for (int64_t n : {1, 5, 16, 17, 64, 129, 1152}) {
      for (int64_t rows : {1, 3, 70}) {
        auto x = test_inputs(rows * n, 5);
        for (auto& v : x) v = std::fmod(v, 50.0f) + 3.0f;  // finite, with a nonzero mean
        const auto weight = test_inputs(n, 6), bias = test_inputs(n, 7);
        std::vector<float> want(x.size()), got(x.size(), NAN);
        const std::string where = std::string(isa_level_name(isa)) + " n=" + std::to_string(n);
        ek::rms_norm_reference(x.data(), weight.data(), 1e-6f, rows, n, want.data());
        {
          IsaScope scope(isa);
          rms_norm(x.data(), weight.data(), 1e-6f, rows, n, got.data());
        }
        expect_close(got, want, 1e-6f, "rms_norm " + where);
        ek::layer_norm_reference(x.data(), weight.data(), bias.data(), 1e-6f, rows, n, want.data());
        {
          IsaScope scope(isa);
          layer_norm(x.data(), weight.data(), bias.data(), 1e-6f, rows, n, got.data());
        }
        expect_close(got, want, 1e-6f, "layer_norm " + where);
      }
    }
  }
}

TEST(Norm, InPlace) {
  for (IsaLevel isa : available_isas()) {
    auto x = test_inputs(3 * 40, 8);
    const auto weight = test_inputs(40, 9);
    std::vector<float> want(x.size());
    ek::rms_norm_reference(x.data(), weight.data(), 1e-6f, 3, 40, want.data());
    IsaScope scope(isa);
    rms_norm(x.data(), weight.data(), 1e-6f, 3, 40, x.data());
    expect_close(x, want, 1e-6f, std::string("rms_norm in place ") + isa_level_name(isa));
  }
}

}  // namespace
}  // namespace qvl::ops
