// The AVX-512 activations and norm rows (elementwise_avx512.inc) compiled against the scalar model
// of the intrinsics (avx512_model*.inc), so they run here without AVX-512: against the scalar
// references with elementwise_test.cpp's tolerances on every tail length, with extreme and
// non-finite inputs; bit for bit against the AVX2 kernels where both exponentials agree (their
// polynomial and scaling are the same); and writing nothing past n.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops/elementwise_kernels.h"
#include "ops/exp2_polynomial.h"
#include "ops/isa_test_util.h"
#include "ops/packed_matrix.h"
#include "ops/x86/elementwise_x86.h"

#ifdef _IMMINTRIN_H_INCLUDED
#error "the AVX-512 model below must not meet the real intrinsics (some are macros)"
#endif

namespace qvl::ops::elementwise_kernels::avx512_model {
namespace {
// In this order: the model, the vector math, the kernels.
#include "avx512_model.inc"
#include "avx512_model_float.inc"
// (keeps clang-format from sorting the fragments)
#include "ops/x86/elementwise_avx512_math.inc"
// (the kernels use the math above)
#include "ops/x86/elementwise_avx512.inc"
}  // namespace
}  // namespace qvl::ops::elementwise_kernels::avx512_model

namespace qvl::ops {
namespace {

namespace ek = elementwise_kernels;
namespace model = elementwise_kernels::avx512_model;

// Normal values, a sweep over [-20, 20], and the extremes (as elementwise_test.cpp).
std::vector<float> test_inputs(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = i % 3 == 0 ? -20.0f + 40.0f * static_cast<float>(i) / static_cast<float>(n) : dist(rng);
  }
  const float extremes[] = {20.0f,  -20.0f, 0.0f,   -0.0f, 1e-8f,  -1e-8f, 90.0f,
                            -90.0f, 1e30f,  -1e30f, 88.5f, -88.5f, 100.0f, -100.0f};
  for (size_t i = 0; i < std::size(extremes) && i < v.size(); ++i)
    v[i * 7 % v.size()] = extremes[i];
  return v;
}

// |got - want| <= tol * max(1, |want|); both NaN or equal infinities also match.
void expect_close(const float* got, const std::vector<float>& want, float tol,
                  const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else if (std::isinf(want[i])) {
      ASSERT_EQ(got[i], want[i]) << what << " at " << i;
    } else {
      ASSERT_LE(std::fabs(got[i] - want[i]), tol * std::max(1.0f, std::fabs(want[i])))
          << what << " at " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

// An output of n floats followed by a guard of 16 that no kernel may write.
struct Guarded {
  explicit Guarded(int64_t n) : v(static_cast<size_t>(n + 16), kGuard), n(n) {}
  static constexpr float kGuard = -12345.0f;
  std::vector<float> v;
  int64_t n;
  float* data() { return v.data(); }
  bool guard_intact() const {
    for (int64_t i = n; i < n + 16; ++i) {
      if (v[static_cast<size_t>(i)] != kGuard) return false;
    }
    return true;
  }
};

bool cpu_has_avx2() {
  return static_cast<int>(best_isa()) >= static_cast<int>(IsaLevel::kAvx2);
}

const int64_t kLengths[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 100, 1000, 70001};

TEST(ElementwiseAvx512Model, SiluMulMatchesTheReference) {
  for (int64_t n : kLengths) {
    auto gate = test_inputs(n, 1);
    gate[0] = INFINITY;
    if (n > 1) gate[1] = -INFINITY;
    const auto up = test_inputs(n, 2);
    std::vector<float> want(gate.size());
    ek::silu_mul_reference(gate.data(), up.data(), n, want.data());
    Guarded got(n);
    model::silu_mul_avx512(gate.data(), up.data(), n, got.data());
    expect_close(got.data(), want, 1e-6f, "silu_mul n=" + std::to_string(n));
    EXPECT_TRUE(got.guard_intact()) << "silu_mul wrote past n=" << n;
  }
}

TEST(ElementwiseAvx512Model, GeluTanhMatchesTheReference) {
  for (int64_t n : kLengths) {
    auto x = test_inputs(n, 3);
    x[0] = INFINITY;
    if (n > 1) x[1] = -INFINITY;
    auto want = x;
    ek::gelu_tanh_reference(want.data(), n);
    Guarded got(n);
    std::copy(x.begin(), x.end(), got.v.begin());
    model::gelu_tanh_avx512(got.data(), n);
    expect_close(got.data(), want, 1e-6f, "gelu_tanh n=" + std::to_string(n));
    EXPECT_TRUE(got.guard_intact()) << "gelu_tanh wrote past n=" << n;
  }
}

TEST(ElementwiseAvx512Model, ExpSumMatchesTheReference) {
  for (int64_t n : kLengths) {
    auto x = test_inputs(n, 4);
    if (n > 3) x[1] = NAN, x[2] = -INFINITY;
    const ExpSum want = ek::exp_sum_reference(x.data(), n);
    const ExpSum got = model::exp_sum_avx512(x.data(), n);
    EXPECT_EQ(got.max, want.max) << n;
    EXPECT_NEAR(got.sum, want.sum, 1e-6 * want.sum) << n;
  }
  const float none[] = {-INFINITY, NAN, -INFINITY};
  EXPECT_EQ(model::exp_sum_avx512(none, 3).max, -INFINITY);
  EXPECT_EQ(model::exp_sum_avx512(none, 3).sum, 0.0);
  const float huge[] = {1.0f, INFINITY, 2.0f};
  EXPECT_EQ(model::exp_sum_avx512(huge, 3).sum, 0.0);
}

TEST(ElementwiseAvx512Model, ActivationsHaveTheAvx2KernelsBits) {
  // |arguments| below 87: both exponentials take the same steps (the AVX2 one saturates earlier).
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2: no AVX2 kernel to compare with";
  for (int64_t n : {int64_t{37}, int64_t{4099}}) {
    const auto gate = testing::random_vector(static_cast<size_t>(n), 5, 8.0f);
    const auto up = testing::random_vector(static_cast<size_t>(n), 6, 1.0f);
    std::vector<float> a(gate.size()), b(gate.size());
    model::silu_mul_avx512(gate.data(), up.data(), n, a.data());
    ek::silu_mul_avx2(gate.data(), up.data(), n, b.data());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "silu_mul " << n;
    a = gate;
    b = gate;
    model::gelu_tanh_avx512(a.data(), n);
    ek::gelu_tanh_avx2(b.data(), n);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "gelu_tanh " << n;
  }
}

TEST(ElementwiseAvx512Model, NormRowsMatchTheReference) {
  for (int64_t n : {1, 5, 8, 15, 16, 17, 31, 64, 129, 1152, 2048, 4099}) {
    auto x = test_inputs(n, 7);
    for (auto& v : x) v = std::fmod(v, 50.0f) + 3.0f;  // finite, with a nonzero mean
    const auto weight = test_inputs(n, 8), bias = test_inputs(n, 9);
    std::vector<float> want(x.size());
    const std::string where = " n=" + std::to_string(n);
    ek::rms_norm_reference(x.data(), weight.data(), 1e-6f, 1, n, want.data());
    Guarded got(n);
    model::rms_norm_row_avx512(x.data(), weight.data(), 1e-6f, n, got.data());
    expect_close(got.data(), want, 1e-6f, "rms_norm" + where);
    EXPECT_TRUE(got.guard_intact()) << "rms_norm wrote past" << where;
    ek::layer_norm_reference(x.data(), weight.data(), bias.data(), 1e-6f, 1, n, want.data());
    Guarded got_ln(n);
    model::layer_norm_row_avx512(x.data(), weight.data(), bias.data(), 1e-6f, n, got_ln.data());
    expect_close(got_ln.data(), want, 1e-6f, "layer_norm" + where);
    EXPECT_TRUE(got_ln.guard_intact()) << "layer_norm wrote past" << where;
    // In place, as the models call them.
    model::rms_norm_row_avx512(x.data(), weight.data(), 1e-6f, n, x.data());
    EXPECT_EQ(std::memcmp(x.data(), got.data(), x.size() * sizeof(float)), 0)
        << "rms_norm in place" << where;
  }
}

TEST(ElementwiseAvx512Model, ExponentialsAgainstLibm) {
  // exp_avx512 over its whole range (to +inf above ~88.72, gradual underflow to 0 below ~-103.9,
  // NaN kept) and exp2_nonpositive_avx512 on softmax arguments, lane by lane.
  std::vector<float> xs;
  for (float x = -110.0f; x <= 90.0f; x += 0.0371f) xs.push_back(x);
  for (float x : {0.0f, -0.0f, 88.72f, 88.73f, -87.33f, -103.0f, -104.0f, INFINITY, -INFINITY})
    xs.push_back(x);
  for (size_t i = 0; i < xs.size(); i += 16) {
    model::__m512 v = model::_mm512_setzero_ps();
    for (size_t l = 0; l < 16 && i + l < xs.size(); ++l) v.f[l] = xs[i + l];
    const model::__m512 e = model::exp_avx512(v);
    for (size_t l = 0; l < 16 && i + l < xs.size(); ++l) {
      const double want = std::exp(static_cast<double>(v.f[l]));
      const float got = e.f[l];
      if (want > 3.4028234663852886e38) {
        EXPECT_EQ(got, INFINITY) << v.f[l];
      } else if (want < 1.2e-38) {  // subnormal results: absolute error of a few ulps of 2^-149
        EXPECT_LE(std::fabs(got - want), 4 * 1.4e-45 + want * 1e-6) << v.f[l];
      } else {
        EXPECT_LE(std::fabs(got - want), 2e-7 * want) << v.f[l] << ": " << got << " vs " << want;
      }
    }
  }
  EXPECT_TRUE(std::isnan(model::exp_avx512(model::_mm512_set1_ps(NAN)).f[3]));
  for (float x = -130.0f; x <= 0.0f; x += 0.0173f) {
    const float got = model::exp2_nonpositive_avx512(model::_mm512_set1_ps(x)).f[7];
    const double want = std::exp2(static_cast<double>(x < -125.0f ? -125.0f : x));
    EXPECT_LE(std::fabs(got - want), 3e-7 * want) << x;
  }
  EXPECT_TRUE(std::isnan(model::exp2_nonpositive_avx512(model::_mm512_set1_ps(NAN)).f[0]));
}

}  // namespace
}  // namespace qvl::ops
