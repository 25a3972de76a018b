// The int8 GEMM (m >= 16 on q8/q4): every micro-kernel this CPU runs against the scalar int8
// oracle on all tail shapes, its error against the exact product, and its dispatch.
#include "ops/int8_gemm.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "int8_gemm_test_util.h"
#include "isa_test_util.h"
#include "ops/int8_gemm_kernels.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using testing::random_vector;

using testing::dequantized;
using testing::Problem;
using testing::summation_bound;

// got and want ([m, n] of problem p) bit for bit, naming the first output that differs.
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const Problem& p) {
  for (size_t at = 0; at < want.size(); ++at) {
    ASSERT_EQ(std::bit_cast<uint32_t>(got[at]), std::bit_cast<uint32_t>(want[at]))
        << "n " << p.n << " k " << p.k << " m " << p.m << " at x row "
        << static_cast<int64_t>(at) / p.n << ", w row " << static_cast<int64_t>(at) % p.n;
  }
}

// Random weights, x and bias for problem p (seeds seed, seed + 1, seed + 2), with every
// outlier_every-th x scaled by outlier_scale so that some x blocks saturate at +-127.
struct Inputs {
  std::vector<float> w, x, bias;
};
Inputs random_inputs(const Problem& p, uint32_t seed, size_t outlier_every, float outlier_scale) {
  Inputs in{random_vector(static_cast<size_t>(p.n * p.k), seed, 0.05f),
            random_vector(static_cast<size_t>(p.m * p.k), seed + 1, 1.0f),
            random_vector(static_cast<size_t>(p.n), seed + 2, 1.0f)};
  for (size_t j = 0; j < in.x.size(); j += outlier_every) in.x[j] *= outlier_scale;
  return in;
}

// q8/q4 groups for kernels that multiply them, else the same values in strips (the aarch64 tiles
// read strips only).
QuantType testable_type(Int8GemmKernel kernel, QuantType type) {
  if (kernels::int8_kernel_supports(kernel, type)) return type;
  return values_type(type) == QuantType::kQ8 ? QuantType::kQ8Strips : QuantType::kQ4Strips;
}

class Int8GemmKernels : public ::testing::TestWithParam<Int8GemmKernel> {
 protected:
  void SetUp() override {
    if (!cpu_runs_int8_gemm_kernel(GetParam())) {
      GTEST_SKIP() << "this CPU cannot run the " << int8_gemm_kernel_name(GetParam())
                   << " int8 GEMM kernel; skipped";
    }
  }
};

TEST_P(Int8GemmKernels, MatchesTheScalarOracleOnEveryTail) {
  // k: one chunk of 256 with a 32-column tail, several chunks and a 96-column tail, exactly 256,
  // and a large depth; n: partial strips of 16 and 32 and a partial row block of 64, and tiny;
  // m: exactly kGemmMinRows, tails of the 4- and 6-row x tiles, and two x blocks of 256 rows.
  const Problem problems[] = {{42, 288, 16},  {101, 1120, 70}, {64, 256, 19}, {5, 96, 23},
                              {20, 6144, 16}, {130, 512, 33},  {16, 32, 17},  {20, 320, 300}};
  for (const Problem& p : problems) {
    const auto w = random_vector(static_cast<size_t>(p.n * p.k), 60, 0.05f);
    auto x = random_vector(static_cast<size_t>(p.m * p.k), 61, 1.0f);
    for (int64_t j = 0; j < 32; ++j) x[static_cast<size_t>(j)] = 0.0f;  // an all-zero block
    const auto bias = random_vector(static_cast<size_t>(p.n), 62, 1.0f);
    for (QuantType asked :
         {QuantType::kQ8, QuantType::kQ4, QuantType::kQ8Strips, QuantType::kQ4Strips}) {
      const QuantType type = testable_type(GetParam(), asked);
      const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), p.n, p.k}, type);
      const auto wd = dequantized(packed);
      std::vector<float> want(static_cast<size_t>(p.m * p.n)), got(want.size(), NAN);
      int8_gemm_reference(x.data(), p.m, packed, bias.data(), want.data());
      int8_gemm(GetParam(), x.data(), p.m, packed, bias.data(), got.data());
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t r = 0; r < p.n; ++r) {
          const size_t at = static_cast<size_t>(i * p.n + r);
          ASSERT_NEAR(got[at], want[at], summation_bound(wd, x, p.k, i, r))
              << quant_type_name(type) << " n " << p.n << " k " << p.k << " m " << p.m
              << " at x row " << i << ", w row " << r;
        }
      }
    }
  }
}

TEST_P(Int8GemmKernels, StaysWithinTheActivationRoundingBoundOfTheExactProduct) {
  // Per block, int8 x is off by at most half a step (absmax / 254) per element, so an output is
  // off by at most sum over blocks of sum|w| * absmax(x) / 254 from the exact product of the
  // (dequantized) weights with fp32 x, plus fp32 summation.
  const int64_t n = 37, k = 800, m = 21;
  const auto w = random_vector(static_cast<size_t>(n * k), 70, 0.05f);
  auto x = random_vector(static_cast<size_t>(m * k), 71, 1.0f);
  for (size_t j = 0; j < x.size(); j += 97) x[j] *= 30.0f;  // outliers, as real activations have
  for (QuantType asked : {QuantType::kQ8, QuantType::kQ4}) {
    const QuantType type = testable_type(GetParam(), asked);
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    const auto wd = dequantized(packed);
    std::vector<float> y(static_cast<size_t>(m * n), NAN);
    int8_gemm(GetParam(), x.data(), m, packed, nullptr, y.data());
    double worst_share = 0;  // largest error as a share of its bound
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t r = 0; r < n; ++r) {
        double exact = 0, bound = 0;
        for (int64_t b = 0; b < k / 32; ++b) {
          double abs_w = 0, amax = 0;
          for (int64_t j = b * 32; j < b * 32 + 32; ++j) {
            const double wv = wd[static_cast<size_t>(r * k + j)];
            const double xv = x[static_cast<size_t>(i * k + j)];
            exact += wv * xv;
            abs_w += std::fabs(wv);
            amax = std::max(amax, std::fabs(xv));
          }
          bound += abs_w * amax / 254.0;
        }
        bound = bound * 1.001 + summation_bound(wd, x, k, i, r);
        const double err = std::fabs(y[static_cast<size_t>(i * n + r)] - exact);
        ASSERT_LE(err, bound) << quant_type_name(type) << " x row " << i << ", w row " << r;
        worst_share = std::max(worst_share, err / bound);
      }
    }
    // The bound is a worst case; typical errors are far below it (random rounding errors cancel).
    EXPECT_LT(worst_share, 0.5) << quant_type_name(type);
  }
}

TEST_P(Int8GemmKernels, RowsMatchTheDecodeGemv) {
  // The same x quantization and integer block dots as the m = 1 kernels: a prompt row gets what
  // decoding it alone would give, up to fp32 summation order.
  const int64_t n = 45, k = 1056, m = 18;
  const auto w = random_vector(static_cast<size_t>(n * k), 80, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 81, 1.0f);
  for (QuantType asked : {QuantType::kQ8, QuantType::kQ4}) {
    const QuantType type = testable_type(GetParam(), asked);
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    const auto wd = dequantized(packed);
    std::vector<float> all(static_cast<size_t>(m * n)), one(static_cast<size_t>(n));
    int8_gemm(GetParam(), x.data(), m, packed, nullptr, all.data());
    for (int64_t i = 0; i < m; ++i) {
      matmul(x.data() + i * k, 1, packed, nullptr, one.data());
      for (int64_t r = 0; r < n; ++r) {
        ASSERT_NEAR(all[static_cast<size_t>(i * n + r)], one[static_cast<size_t>(r)],
                    summation_bound(wd, x, k, i, r))
            << quant_type_name(type) << " x row " << i << ", w row " << r;
      }
    }
  }
}

TEST_P(Int8GemmKernels, RowsDoNotDependOnMOrTheirPlaceInTheTile) {
  // A row's result is computed by the same instructions whatever m (>= kGemmMinRows) and wherever
  // the row falls in the x tile and x block, so prompt chunking cannot change results: rows of an
  // m = 300 product equal, bit for bit, the same rows taken as products of their own.
  const int64_t n = 40, k = 608, m = 300;
  const auto w = random_vector(static_cast<size_t>(n * k), 100, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 101, 1.0f);
  const auto bias = random_vector(static_cast<size_t>(n), 102, 1.0f);
  for (QuantType asked : {QuantType::kQ8, QuantType::kQ4}) {
    const QuantType type = testable_type(GetParam(), asked);
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    std::vector<float> all(static_cast<size_t>(m * n));
    int8_gemm(GetParam(), x.data(), m, packed, bias.data(), all.data());
    for (int64_t rows : {16, 17, 37, 64}) {
      for (int64_t first : {int64_t{0}, int64_t{5}, int64_t{250} - rows, m - rows}) {
        std::vector<float> part(static_cast<size_t>(rows * n));
        int8_gemm(GetParam(), x.data() + first * k, rows, packed, bias.data(), part.data());
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t r = 0; r < n; ++r) {
            ASSERT_EQ(part[static_cast<size_t>(i * n + r)],
                      all[static_cast<size_t>((first + i) * n + r)])
                << quant_type_name(type) << " m " << rows << " from x row " << first << ": row "
                << i << ", w row " << r;
          }
        }
      }
    }
  }
}

TEST_P(Int8GemmKernels, GivesTheBitsOfTheAvx2Kernel) {
  // Every kernel forms the same exact int32 block dots and applies the same fp32 update per block
  // (c = fma(dot, w scale * x scale, c), blocks in order), so all agree bit for bit.
  if (!cpu_runs_int8_gemm_kernel(Int8GemmKernel::kAvx2)) GTEST_SKIP() << "no AVX2";
  const int64_t n = 70, k = 1344, m = 29;
  const auto w = random_vector(static_cast<size_t>(n * k), 110, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 111, 1.0f);
  for (QuantType type : {QuantType::kQ8, QuantType::kQ4}) {
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    std::vector<float> want(static_cast<size_t>(m * n)), got(want.size());
    int8_gemm(Int8GemmKernel::kAvx2, x.data(), m, packed, nullptr, want.data());
    int8_gemm(GetParam(), x.data(), m, packed, nullptr, got.data());
    EXPECT_EQ(got, want) << quant_type_name(type);
  }
}

TEST_P(Int8GemmKernels, StoredStripsGiveTheBitsOfTheirGroupsAtAnyM) {
  // kQ8Strips / kQ4Strips hold kQ8's / kQ4's values: read in place (VNNI kernels) or repacked
  // from the strips (others), every kernel must give exactly the groups' bits, also below
  // kGemmMinRows (matmul sends strips here for any m; every x tile height of the small-batch
  // tiles). n: a partial 16-row half and 32-row strip, a partial row block.
  if (!kernels::int8_kernel_supports(GetParam(), QuantType::kQ8)) GTEST_SKIP() << "strips only";
  const Problem problems[] = {{42, 288, 1},  {77, 1120, 3},  {16, 32, 7},    {48, 320, 5},
                              {33, 608, 15}, {100, 544, 16}, {131, 320, 40}, {5, 96, 263}};
  for (const Problem& p : problems) {
    const auto [w, x, bias] = random_inputs(p, 130, 41, 50.0f);
    const WeightRef source{WeightType::kF32, w.data(), p.n, p.k};
    for (QuantType type : {QuantType::kQ8, QuantType::kQ4}) {
      SCOPED_TRACE(quant_type_name(type));
      const auto groups = PackedMatrix::pack(source, type);
      const auto strips = PackedMatrix::pack(
          source, type == QuantType::kQ8 ? QuantType::kQ8Strips : QuantType::kQ4Strips);
      std::vector<float> want(static_cast<size_t>(p.m * p.n)), got(want.size(), NAN);
      int8_gemm(GetParam(), x.data(), p.m, groups, bias.data(), want.data());
      int8_gemm(GetParam(), x.data(), p.m, strips, bias.data(), got.data());
      expect_same_bits(got, want, p);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllKernels, Int8GemmKernels,
                         ::testing::Values(Int8GemmKernel::kAvx2, Int8GemmKernel::kAvxVnni,
                                           Int8GemmKernel::kAvx512Vnni,
                                           Int8GemmKernel::kAvxVnniEmulated,
                                           Int8GemmKernel::kNeonSmull, Int8GemmKernel::kNeonDotprod,
                                           Int8GemmKernel::kNeonI8mm),
                         [](const ::testing::TestParamInfo<Int8GemmKernel>& info) {
                           std::string name = int8_gemm_kernel_name(info.param);
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

// Restores the default activations however a test ends.
struct ActivationsScope {
  explicit ActivationsScope(GemmActivations act) { set_gemm_activations(act); }
  ~ActivationsScope() { set_gemm_activations(std::nullopt); }
};

TEST(Int8GemmDispatch, MatmulUsesTheInt8GemmUnlessToldF32) {
  if (best_isa() == IsaLevel::kScalar) GTEST_SKIP() << "no SIMD level: the GEMMs are not used";
  const int64_t n = 24, k = 320, m = kernels::kGemmMinRows;
  const auto w = random_vector(static_cast<size_t>(n * k), 90, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 91, 1.0f);
  for (QuantType type : {QuantType::kQ8, QuantType::kQ4}) {
    const std::optional<Int8GemmKernel> kernel =
        kernels::int8_kernel_for(best_isa(), type, ActivationPrecision::kInt8);
    if (!kernel) continue;  // this level multiplies such matrices without the int8 GEMM
    const Int8GemmKernel best = *kernel;
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    std::vector<float> int8(static_cast<size_t>(m * n)), f32(int8.size()), direct(int8.size());
    int8_gemm(best, x.data(), m, packed, nullptr, direct.data());
    {
      ActivationsScope scope(GemmActivations::kInt8);
      matmul(x.data(), m, packed, nullptr, int8.data());
    }
    {
      ActivationsScope scope(GemmActivations::kF32);
      matmul(x.data(), m, packed, nullptr, f32.data());
    }
    EXPECT_EQ(int8, direct) << quant_type_name(type);
    EXPECT_NE(f32, int8) << quant_type_name(type) << ": f32 activations must not round x";
  }
}

TEST(Int8GemmDispatch, MatmulTakesTheInt8GemmForStoredStripsAtAnyM) {
  // Also under f32 GEMM activations and for single rows; the scalar level takes the oracle.
  const int64_t n = 40, k = 320;
  const auto w = random_vector(static_cast<size_t>(n * k), 94, 0.05f);
  for (QuantType type : {QuantType::kQ8Strips, QuantType::kQ4Strips}) {
    SCOPED_TRACE(quant_type_name(type));
    const auto strips = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    for (int64_t m : {int64_t{1}, int64_t{5}, kernels::kGemmMinRows, int64_t{50}}) {
      const auto x = random_vector(static_cast<size_t>(m * k), 95, 1.0f);
      std::vector<float> got(static_cast<size_t>(m * n)), want(got.size());
      {
        testing::IsaScope scalar(IsaLevel::kScalar);
        matmul(x.data(), m, strips, nullptr, got.data());
      }
      int8_gemm_reference(x.data(), m, strips, nullptr, want.data());
      EXPECT_EQ(got, want) << "scalar, m " << m;
      if (best_isa() == IsaLevel::kScalar) continue;
      const std::optional<Int8GemmKernel> kernel =
          kernels::int8_kernel_for(best_isa(), strips.type(), ActivationPrecision::kInt8);
      if (!kernel) continue;
      const Int8GemmKernel best = *kernel;
      int8_gemm(best, x.data(), m, strips, nullptr, want.data());
      for (GemmActivations act : {GemmActivations::kInt8, GemmActivations::kF32}) {
        ActivationsScope scope(act);
        matmul(x.data(), m, strips, nullptr, got.data());
        EXPECT_EQ(got, want) << gemm_activations_name(act) << ", m " << m;
      }
    }
  }
}

TEST(Int8GemmScratch, ReleaseFreesTheCallingThreadsCopyOfXAndTheNextCallGivesTheSameBits) {
  const std::optional<Int8GemmKernel> kernel =
      best_isa() == IsaLevel::kScalar
          ? std::nullopt
          : kernels::int8_kernel_for(best_isa(), QuantType::kQ8Strips, ActivationPrecision::kInt8);
  if (!kernel) GTEST_SKIP() << "no int8 GEMM at this level";
  const int64_t n = 24, k = 320, m = 200;
  const auto w = random_vector(static_cast<size_t>(n * k), 92, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 93, 1.0f);
  const auto packed =
      PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, QuantType::kQ8Strips);
  std::vector<float> first(static_cast<size_t>(m * n)), again(first.size());
  int8_gemm(*kernel, x.data(), m, packed, nullptr, first.data());
  EXPECT_GE(int8_gemm_scratch_bytes(), static_cast<size_t>(m * k));  // x as int8, at least
  release_int8_gemm_scratch();
  EXPECT_EQ(int8_gemm_scratch_bytes(), 0u);
  int8_gemm(*kernel, x.data(), m, packed, nullptr, again.data());
  EXPECT_EQ(again, first);
}

}  // namespace
}  // namespace qvl::ops
