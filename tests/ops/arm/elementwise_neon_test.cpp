// The NEON activations, norm rows, softmax statistics and half conversions against the scalar
// references, directly (not through the dispatch): every tail length 1..70, long rows, extreme and
// non-finite inputs, and nothing written past n.
#include "ops/arm/elementwise_neon.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "ops/arm/half_convert_neon.h"
#include "ops/elementwise_kernels.h"
#include "ops/packed_kernels.h"
#include "ops/softmax_stats.h"

namespace qvl::ops {
namespace {

namespace ek = elementwise_kernels;

constexpr float kTolerance = 1e-6f;  // elementwise_test.cpp's; the dispatch's self-check uses 1e-5
constexpr float kCanary = 12345.0f;
constexpr int64_t kGuard = 8;  // canary floats after every output

// 1..70 (every tail of 4, 8 and 16 lanes, several times) and long rows.
std::vector<int64_t> lengths() {
  std::vector<int64_t> n;
  for (int64_t i = 1; i <= 70; ++i) n.push_back(i);
  for (int64_t i : {127, 129, 1001, 2048, 6144, 70001}) n.push_back(i);
  return n;
}

// A sweep over [-20, 20], normal values, and the extremes (near and beyond exp's overflow and
// underflow); with `huge`, also values whose cube or exponential overflows.
std::vector<float> test_inputs(int64_t n, uint32_t seed, bool huge = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = i % 3 == 0 ? -20.0f + 40.0f * static_cast<float>(i) / static_cast<float>(n) : dist(rng);
  }
  const float extremes[] = {20.0f, -20.0f, 0.0f,  -0.0f,  1e-8f, -1e-8f, 90.0f, -90.0f,
                            1e30f, -1e30f, 88.5f, -88.5f, 87.9f, -87.9f, 3e38f, -3e38f};
  const size_t count = huge ? std::size(extremes) : 10;
  for (size_t i = 0; i < count && i < v.size(); ++i) v[i * 7 % v.size()] = extremes[i];
  return v;
}

// An output buffer of n floats (NaN) followed by canaries.
std::vector<float> guarded(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n), NAN);
  v.resize(static_cast<size_t>(n + kGuard), kCanary);
  return v;
}

// |got - want| <= tol * max(1, |want|) over the first want.size() floats; both NaN or equal
// infinities also match; the canaries after them are intact.
void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size() + kGuard) << what;
  int failures = 0;
  for (size_t i = 0; i < want.size() && failures < 10; ++i) {
    bool ok;
    if (std::isnan(want[i])) {
      ok = std::isnan(got[i]);
    } else if (std::isinf(want[i])) {
      ok = got[i] == want[i];
    } else {
      ok = std::fabs(got[i] - want[i]) <= kTolerance * std::max(1.0f, std::fabs(want[i]));
    }
    if (!ok) ++failures;
    EXPECT_TRUE(ok) << what << " at " << i << ": " << got[i] << " vs " << want[i];
  }
  for (size_t i = want.size(); i < got.size(); ++i)
    EXPECT_EQ(got[i], kCanary) << what << ": written past n";
}

TEST(ElementwiseNeon, SiluMulMatchesReference) {
  for (int64_t n : lengths()) {
    auto gate = test_inputs(n, 1, true);
    gate[0] = INFINITY;
    if (n > 1) gate[1] = -INFINITY;
    if (n > 20) gate[20] = NAN;
    const auto up = test_inputs(n, 2);
    std::vector<float> want(gate.size());
    auto got = guarded(n);
    ek::silu_mul_reference(gate.data(), up.data(), n, want.data());
    ek::silu_mul_neon(gate.data(), up.data(), n, got.data());
    expect_close(got, want, "silu_mul n=" + std::to_string(n));
  }
}

TEST(ElementwiseNeon, GeluTanhMatchesReference) {
  for (int64_t n : lengths()) {
    auto x = test_inputs(n, 3, true);
    x[0] = INFINITY;
    if (n > 1) x[1] = -INFINITY;  // NaN in the reference too (-inf * 0)
    if (n > 20) x[20] = NAN;
    auto want = x, got = x;
    got.resize(static_cast<size_t>(n + kGuard), kCanary);
    ek::gelu_tanh_reference(want.data(), n);
    ek::gelu_tanh_neon(got.data(), n);
    expect_close(got, want, "gelu_tanh n=" + std::to_string(n));
  }
}

TEST(ElementwiseNeon, NormRowsMatchReference) {
  for (int64_t n : lengths()) {
    auto x = test_inputs(n, 5);
    for (auto& v : x) v = std::fmod(v, 50.0f) + 3.0f;  // finite, with a nonzero mean
    const auto weight = test_inputs(n, 6), bias = test_inputs(n, 7);
    for (float eps : {1e-6f, 1e-5f}) {
      const std::string where = " n=" + std::to_string(n) + " eps=" + std::to_string(eps);
      std::vector<float> want(x.size());
      auto got = guarded(n);
      ek::rms_norm_reference(x.data(), weight.data(), eps, 1, n, want.data());
      ek::rms_norm_row_neon(x.data(), weight.data(), eps, n, got.data());
      expect_close(got, want, "rms_norm" + where);
      got = guarded(n);
      ek::layer_norm_reference(x.data(), weight.data(), bias.data(), eps, 1, n, want.data());
      ek::layer_norm_row_neon(x.data(), weight.data(), bias.data(), eps, n, got.data());
      expect_close(got, want, "layer_norm" + where);
    }
  }
}

// Logit-like rows with NaN and -inf entries, a vocabulary's worth too.
TEST(ElementwiseNeon, ExpSumMatchesReference) {
  auto ns = lengths();
  ns.push_back(151936);
  for (int64_t n : ns) {
    std::mt19937 rng(9);
    std::normal_distribution<float> dist(0.0f, 12.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = dist(rng);
    if (n > 3) x[1] = NAN, x[2] = -INFINITY;
    const ExpSum want = ek::exp_sum_reference(x.data(), n);
    const ExpSum got = ek::exp_sum_neon(x.data(), n);
    EXPECT_EQ(got.max, want.max) << n;
    EXPECT_NEAR(got.sum, want.sum, 1e-6 * want.sum) << n;
  }
}

TEST(ElementwiseNeon, ExpSumDegenerateRows) {
  EXPECT_EQ(ek::exp_sum_neon(nullptr, 0).max, -INFINITY);
  EXPECT_EQ(ek::exp_sum_neon(nullptr, 0).sum, 0.0);
  const std::vector<float> none = {-INFINITY, NAN, -INFINITY};
  EXPECT_EQ(ek::exp_sum_neon(none.data(), 3).max, -INFINITY);
  EXPECT_EQ(ek::exp_sum_neon(none.data(), 3).sum, 0.0);
  const std::vector<float> huge = {1.0f, INFINITY, 2.0f};
  EXPECT_EQ(ek::exp_sum_neon(huge.data(), 3).max, INFINITY);
  EXPECT_EQ(ek::exp_sum_neon(huge.data(), 3).sum, 0.0);
  // Terms far below the max vanish rather than turning into NaN or garbage.
  const std::vector<float> spread = {0.0f, -200.0f, -1e30f, -90.0f, 0.0f};
  EXPECT_NEAR(ek::exp_sum_neon(spread.data(), 5).sum, 2.0, 1e-12);
  // NaN in every position of the vector and the tail reads as -inf.
  for (int64_t n = 1; n <= 17; ++n) {
    std::vector<float> x(static_cast<size_t>(n), NAN);
    x[n - 1] = 5.0f;
    const ExpSum s = ek::exp_sum_neon(x.data(), n);
    EXPECT_EQ(s.max, 5.0f) << n;
    EXPECT_EQ(s.sum, 1.0) << n;
  }
}

// The input of activation.cpp's one-time self-check (agrees_with_reference), at its tolerance.
TEST(ElementwiseNeon, PassesTheDispatchSelfCheck) {
  constexpr int64_t n = 45;
  std::vector<float> x(n), w(n), b(n), want(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 13) * 0.9f - 5.0f;
    w[i] = 1.0f + static_cast<float>(i % 5) * 0.1f;
    b[i] = static_cast<float>(i % 3) * 0.2f;
  }
  std::vector<float> got(n);
  const auto close = [&] {
    for (int64_t i = 0; i < n; ++i) {
      if (!(std::fabs(got[i] - want[i]) <= 1e-5f * std::max(1.0f, std::fabs(want[i]))))
        return false;
    }
    return true;
  };
  ek::silu_mul_reference(x.data(), w.data(), n, want.data());
  ek::silu_mul_neon(x.data(), w.data(), n, got.data());
  EXPECT_TRUE(close()) << "silu_mul";
  want = got = x;
  ek::gelu_tanh_reference(want.data(), n);
  ek::gelu_tanh_neon(got.data(), n);
  EXPECT_TRUE(close()) << "gelu_tanh";
  ek::rms_norm_reference(x.data(), w.data(), 1e-6f, 1, n, want.data());
  ek::rms_norm_row_neon(x.data(), w.data(), 1e-6f, n, got.data());
  EXPECT_TRUE(close()) << "rms_norm";
  ek::layer_norm_reference(x.data(), w.data(), b.data(), 1e-6f, 1, n, want.data());
  ek::layer_norm_row_neon(x.data(), w.data(), b.data(), 1e-6f, n, got.data());
  EXPECT_TRUE(close()) << "layer_norm";
  const ExpSum want_sum = ek::exp_sum_reference(x.data(), n);
  const ExpSum got_sum = ek::exp_sum_neon(x.data(), n);
  EXPECT_EQ(got_sum.max, want_sum.max);
  EXPECT_LE(std::fabs(got_sum.sum - want_sum.sum), 1e-6 * want_sum.sum);
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Every half bit pattern to float and back: the same bits as the scalar conversions, NaN payloads,
// signalling NaNs and subnormals included.
TEST(HalfConvertNeon, EveryHalfRoundTripsBitExactly) {
  std::vector<uint16_t> h(65536);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> f(h.size());
  f16_to_f32_neon(h.data(), static_cast<int64_t>(h.size()), f.data());
  int failures = 0;
  for (size_t i = 0; i < h.size() && failures < 10; ++i) {
    const bool same = bits_of(f[i]) == bits_of(qvl::f16_to_f32(h[i]));
    failures += !same;
    EXPECT_TRUE(same) << std::hex << i << ": " << bits_of(f[i]);
  }
  std::vector<uint16_t> back(h.size());
  f32_to_f16_neon(f.data(), static_cast<int64_t>(f.size()), back.data());
  for (size_t i = 0; i < h.size() && failures < 10; ++i) {
    const bool same = back[i] == kernels::f32_to_f16(f[i]);
    failures += !same;
    EXPECT_TRUE(same) << std::hex << i << ": " << back[i];
  }
}

// Random float bit patterns weighted towards the half range, rounding ties, subnormal halves and
// NaNs with payloads, at every tail length.
TEST(HalfConvertNeon, FloatsMatchScalarBitExactly) {
  std::mt19937 rng(7);
  std::vector<float> x(1 << 18);
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t b = rng();
    if (i % 4 == 1) b = (b & 0x8000ffffu) | ((b >> 16) % 40 + 100) << 23;    // 2^-27 .. 2^12
    if (i % 8 == 2) b &= 0x8000e000u | (0xffu << 23), b |= 0x1000u;          // exact ties
    if (i % 16 == 3) b |= 0x7f800000u;                                       // inf and NaNs
    if (i % 16 == 7) b = (b & 0x807fffffu) | (((b >> 23) % 14 + 99) << 23);  // subnormal halves
    std::memcpy(&x[i], &b, sizeof b);
  }
  for (int64_t n : lengths()) {
    const int64_t len = n > 70 ? static_cast<int64_t>(x.size()) : n;
    std::vector<uint16_t> h(static_cast<size_t>(len + kGuard), 0xabcd);
    f32_to_f16_neon(x.data(), len, h.data());
    int failures = 0;
    for (int64_t i = 0; i < len && failures < 10; ++i) {
      const bool same = h[i] == kernels::f32_to_f16(x[i]);
      failures += !same;
      EXPECT_TRUE(same) << std::hex << bits_of(x[i]) << ": " << h[i] << " n=" << std::dec << len;
    }
    for (int64_t i = len; i < len + kGuard; ++i) EXPECT_EQ(h[i], 0xabcd) << "written past n";
    std::vector<float> f = guarded(len);
    f16_to_f32_neon(h.data(), len, f.data());
    for (int64_t i = 0; i < len && failures < 10; ++i) {
      const bool same = bits_of(f[i]) == bits_of(qvl::f16_to_f32(h[i]));
      failures += !same;
      EXPECT_TRUE(same) << std::hex << h[i] << ": " << bits_of(f[i]);
    }
    for (int64_t i = len; i < len + kGuard; ++i) EXPECT_EQ(f[i], kCanary) << "written past n";
  }
}

}  // namespace
}  // namespace qvl::ops
