// The AVX2 int8 GEMM kernel with 7-bit activations on stored q8 strips (Int8GemmKernel::kAvx2X7)
// against its scalar oracle on every tail, its rounding bound against the exact product, and the
// dispatch that uses it only for ActivationPrecision::kFastest on AVX2 without AVX-VNNI.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/int8_gemm.h"
#include "ops/int8_gemm_test_util.h"
#include "ops/isa_test_util.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"
#include "ops/x86/packed_kernels_x86.h"

namespace qvl::ops {
namespace {

using testing::random_vector;

using testing::dequantized;
using testing::Problem;
using testing::summation_bound;

class Int8GemmX7 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu_runs_int8_gemm_kernel(Int8GemmKernel::kAvx2X7)) {
      GTEST_SKIP() << "this CPU cannot run the avx2-x7 int8 GEMM kernel (no AVX2); skipped";
    }
  }
};

PackedMatrix pack(const std::vector<float>& w, const Problem& p, QuantType type) {
  return PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), p.n, p.k}, type);
}

TEST_F(Int8GemmX7, MatchesTheSevenBitOracleOnEveryTail) {
  // n: partial 16-row halves, 32-row strips and 64-row blocks; k: chunk tails and a large depth;
  // m: single rows and tails of the 5-row x tile below and above kGemmMinRows, two x blocks.
  const Problem problems[] = {{42, 288, 1},    {77, 1120, 3}, {16, 32, 7},    {64, 256, 16},
                              {101, 1120, 19}, {5, 96, 23},   {20, 6144, 16}, {130, 512, 33},
                              {20, 320, 300},  {33, 64, 261}};
  for (const Problem& p : problems) {
    const auto w = random_vector(static_cast<size_t>(p.n * p.k), 200, 0.05f);
    auto x = random_vector(static_cast<size_t>(p.m * p.k), 201, 1.0f);
    for (int64_t j = 0; j < 32; ++j) x[static_cast<size_t>(j)] = 0.0f;  // an all-zero block
    for (size_t j = 40; j < x.size(); j += 53) x[j] *= 60.0f;           // outliers saturate +-63
    const auto bias = random_vector(static_cast<size_t>(p.n), 202, 1.0f);
    const auto strips = pack(w, p, QuantType::kQ8Strips);
    EXPECT_EQ(int8_gemm_x_max(Int8GemmKernel::kAvx2X7, QuantType::kQ8Strips), 63);
    const auto wd = dequantized(strips);
    std::vector<float> want(static_cast<size_t>(p.m * p.n)), got(want.size(), NAN);
    int8_gemm_reference(x.data(), p.m, strips, bias.data(), want.data(), 63);
    int8_gemm(Int8GemmKernel::kAvx2X7, x.data(), p.m, strips, bias.data(), got.data());
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t r = 0; r < p.n; ++r) {
        const size_t at = static_cast<size_t>(i * p.n + r);
        ASSERT_NEAR(got[at], want[at], summation_bound(wd, x, p.k, i, r))
            << "n " << p.n << " k " << p.k << " m " << p.m << " at x row " << i << ", w row " << r;
      }
    }
  }
}

TEST_F(Int8GemmX7, OtherTypesGetTheBitsOfTheAvx2Kernel) {
  // q8 groups and q4 (groups or strips) keep 8-bit x: kAvx2X7 is kAvx2 there, at any m.
  for (const Problem& p : {Problem{42, 288, 3}, Problem{70, 1344, 29}}) {
    const auto w = random_vector(static_cast<size_t>(p.n * p.k), 210, 0.05f);
    const auto x = random_vector(static_cast<size_t>(p.m * p.k), 211, 1.0f);
    for (QuantType type : {QuantType::kQ8, QuantType::kQ4, QuantType::kQ4Strips}) {
      if (type == QuantType::kQ8 && p.m < kernels::kGemmMinRows) continue;  // GEMV territory
      EXPECT_EQ(int8_gemm_x_max(Int8GemmKernel::kAvx2X7, type), 127);
      const auto packed = pack(w, p, type);
      std::vector<float> want(static_cast<size_t>(p.m * p.n)), got(want.size(), NAN);
      int8_gemm(Int8GemmKernel::kAvx2, x.data(), p.m, packed, nullptr, want.data());
      int8_gemm(Int8GemmKernel::kAvx2X7, x.data(), p.m, packed, nullptr, got.data());
      EXPECT_EQ(got, want) << quant_type_name(type) << " m " << p.m;
    }
  }
}

TEST_F(Int8GemmX7, StaysWithinTheSevenBitRoundingBoundOfTheExactProduct) {
  // 7-bit x is off by at most half a step (absmax / 126) per element: per output at most the sum
  // over blocks of sum|w| * absmax(x) / 126 from the product of the dequantized weights with fp32
  // x, plus fp32 summation; typical errors are far below that worst case.
  const Problem p{37, 800, 21};
  const auto w = random_vector(static_cast<size_t>(p.n * p.k), 220, 0.05f);
  auto x = random_vector(static_cast<size_t>(p.m * p.k), 221, 1.0f);
  for (size_t j = 0; j < x.size(); j += 97) x[j] *= 30.0f;
  const auto strips = pack(w, p, QuantType::kQ8Strips);
  const auto wd = dequantized(strips);
  std::vector<float> y(static_cast<size_t>(p.m * p.n), NAN);
  int8_gemm(Int8GemmKernel::kAvx2X7, x.data(), p.m, strips, nullptr, y.data());
  double worst_share = 0;
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t r = 0; r < p.n; ++r) {
      double exact = 0, bound = 0;
      for (int64_t b = 0; b < p.k / 32; ++b) {
        double abs_w = 0, amax = 0;
        for (int64_t j = b * 32; j < b * 32 + 32; ++j) {
          const double wv = wd[static_cast<size_t>(r * p.k + j)];
          const double xv = x[static_cast<size_t>(i * p.k + j)];
          exact += wv * xv;
          abs_w += std::fabs(wv);
          amax = std::max(amax, std::fabs(xv));
        }
        bound += abs_w * amax / 126.0;
      }
      bound = bound * 1.001 + summation_bound(wd, x, p.k, i, r);
      const double err = std::fabs(y[static_cast<size_t>(i * p.n + r)] - exact);
      ASSERT_LE(err, bound) << "x row " << i << ", w row " << r;
      worst_share = std::max(worst_share, err / bound);
    }
  }
  EXPECT_LT(worst_share, 0.5);
}

TEST_F(Int8GemmX7, RowsDoNotDependOnMOrTheirPlaceInTheTile) {
  // One image's rows give the same bits in any row chunk: rows of an m = 300 product equal the
  // same rows computed as products of their own (below kGemmMinRows too: the kernel reads the
  // strips at every m).
  const Problem p{40, 608, 300};
  const auto w = random_vector(static_cast<size_t>(p.n * p.k), 230, 0.05f);
  const auto x = random_vector(static_cast<size_t>(p.m * p.k), 231, 1.0f);
  const auto bias = random_vector(static_cast<size_t>(p.n), 232, 1.0f);
  const auto strips = pack(w, p, QuantType::kQ8Strips);
  std::vector<float> all(static_cast<size_t>(p.m * p.n));
  int8_gemm(Int8GemmKernel::kAvx2X7, x.data(), p.m, strips, bias.data(), all.data());
  for (int64_t rows : {1, 4, 16, 17, 37, 256}) {
    for (int64_t first : {int64_t{0}, int64_t{3}, p.m - rows}) {
      std::vector<float> part(static_cast<size_t>(rows * p.n));
      int8_gemm(Int8GemmKernel::kAvx2X7, x.data() + first * p.k, rows, strips, bias.data(),
                part.data());
      for (int64_t i = 0; i < rows * p.n; ++i) {
        ASSERT_EQ(part[static_cast<size_t>(i)], all[static_cast<size_t>(first * p.n + i)])
            << "m " << rows << " from x row " << first << ": output " << i;
      }
    }
  }
}

// Restores AVX-VNNI and the ISA level however a test ends.
struct Avx2OnlyScope {
  testing::IsaScope isa{IsaLevel::kAvx2};
  Avx2OnlyScope() { set_avx_vnni_allowed(false); }
  ~Avx2OnlyScope() { set_avx_vnni_allowed(true); }
};

TEST_F(Int8GemmX7, MatmulUsesItOnlyForTheFastestPrecisionOnAvx2WithoutVnni) {
  const Problem p{40, 320, 24};
  const auto w = random_vector(static_cast<size_t>(p.n * p.k), 240, 0.05f);
  const auto x = random_vector(static_cast<size_t>(p.m * p.k), 241, 1.0f);
  const auto strips = pack(w, p, QuantType::kQ8Strips);
  std::vector<float> x7(static_cast<size_t>(p.m * p.n)), x8(x7.size());
  int8_gemm(Int8GemmKernel::kAvx2X7, x.data(), p.m, strips, nullptr, x7.data());
  int8_gemm(Int8GemmKernel::kAvx2, x.data(), p.m, strips, nullptr, x8.data());
  ASSERT_NE(x7, x8) << "7-bit x must round differently";
  std::vector<float> got(x7.size());
  {
    Avx2OnlyScope avx2;
    EXPECT_STREQ(active_int8_gemm_kernel_name(), "avx2");
    matmul(x.data(), p.m, strips, nullptr, got.data(), ActivationPrecision::kFastest);
    EXPECT_EQ(got, x7);
    matmul(x.data(), p.m, strips, nullptr, got.data());
    EXPECT_EQ(got, x8) << "text products keep 8-bit x";
  }
  if (cpu_runs_int8_gemm_kernel(
          Int8GemmKernel::kAvxVnni)) {  // exact 8-bit x at full speed: no reason to round more
    testing::IsaScope isa(IsaLevel::kAvx2);
    std::vector<float> want(x7.size());
    int8_gemm(Int8GemmKernel::kAvxVnni, x.data(), p.m, strips, nullptr, want.data());
    matmul(x.data(), p.m, strips, nullptr, got.data(), ActivationPrecision::kFastest);
    EXPECT_EQ(got, want);
  }
  if (best_isa() == IsaLevel::kAvx512) {
    std::vector<float> want(x7.size());
    int8_gemm(Int8GemmKernel::kAvx512Vnni, x.data(), p.m, strips, nullptr, want.data());
    matmul(x.data(), p.m, strips, nullptr, got.data(), ActivationPrecision::kFastest);
    EXPECT_EQ(got, want);
  }
}

TEST(QuantizeRowTo, SevenBitsAtTheAvx2LevelEqualTheScalarOracle) {
  if (best_isa() == IsaLevel::kScalar) GTEST_SKIP() << "no AVX2";
  const int64_t nb = 9;
  auto x = random_vector(static_cast<size_t>(nb * 32), 250, 1.0f);
  for (int64_t j = 0; j < 32; ++j) x[static_cast<size_t>(32 + j)] = 0.0f;  // a zero block
  x[70] = NAN;
  for (int32_t qmax : {63, 127, 1}) {
    std::vector<int8_t> qa(x.size()), qb(x.size());
    std::vector<float> sa(nb), sb(nb);
    std::vector<int32_t> ua(nb), ub(nb);
    kernels::quantize_row_to_scalar(x.data(), nb, qmax, qa.data(), sa.data(), ua.data());
    kernels::quantize_row_to_avx2(x.data(), nb, qmax, qb.data(), sb.data(), ub.data());
    EXPECT_EQ(qa, qb) << qmax;
    EXPECT_EQ(sa, sb) << qmax;
    EXPECT_EQ(ua, ub) << qmax;
    for (int8_t q : qa) ASSERT_LE(std::abs(static_cast<int>(q)), qmax);
  }
}

}  // namespace
}  // namespace qvl::ops
