// matmul on PackedMatrix, for every type and every ISA level this CPU runs, against a
// double-precision reference on the dequantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "isa_test_util.h"
#include "ops/int8_gemm_kernels.h"
#include "ops/matmul.h"
#include "ops/packed_gemm.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using testing::available_isas;
using testing::IsaScope;
using testing::random_vector;

// Whether matmul rounds x to int8 blocks for q8/q4: the GEMV, small-batch kernels and int8 GEMM
// do; the fp32 GEMM (SIMD levels, m >= kGemmMinRows, GemmActivations::kF32) multiplies fp32 x
// with exactly dequantized weights.
bool rounds_x_to_int8(QuantType type, IsaLevel isa, int64_t m) {
  if (values_type(type) != QuantType::kQ8 && values_type(type) != QuantType::kQ4) return false;
  // A level without an fp32 GEMM for the type runs the small-batch kernels at every m.
  return isa == IsaLevel::kScalar || m < kernels::kGemmMinRows || in_strips(type) ||
         gemm_activations() == GemmActivations::kInt8 ||
         kernels::gemm_kernels_for(isa, type) == nullptr;
}

// Runs a test body once per GEMM activation type, restoring the default afterwards.
template <typename Body>
void for_each_gemm_activations(Body body) {
  for (GemmActivations act : {GemmActivations::kInt8, GemmActivations::kF32}) {
    set_gemm_activations(act);
    SCOPED_TRACE(gemm_activations_name(act));
    body();
  }
  set_gemm_activations(std::nullopt);
}

// Checks y against sum_j w[r][j] * x[i][j] in double. The tolerance is the format's activation
// error (bf16 rounding on AVX-512 and ARM i8mm; int8 block quantization: half a step of
// absmax/127 per block) plus fp32 accumulation.
void expect_matches_reference(const PackedMatrix& w, const std::vector<float>& x, int64_t m,
                              const float* bias, const std::vector<float>& y, IsaLevel isa) {
  const int64_t n = w.rows(), k = w.cols();
  std::vector<float> wd(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r) w.row_to_f32(r, wd.data() + r * k);
  // AVX-512 and ARM i8mm round x to bf16 for bf16 weights (vdpbf16ps, BFMMLA), in the GEMV and
  // the GEMM alike.
  const bool bf16_x =
      w.type() == QuantType::kBF16 && (isa == IsaLevel::kAvx512 || isa == IsaLevel::kNeonI8mm);
  const bool int8_x = rounds_x_to_int8(w.type(), isa, m);
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x.data() + i * k;
    for (int64_t r = 0; r < n; ++r) {
      const float* wr = wd.data() + r * k;
      double ref = bias ? bias[r] : 0.0, abs_sum = 0, activation_error = 0;
      for (int64_t b = 0; b < k / 32; ++b) {
        double block_abs_w = 0, amax = 0;
        for (int64_t j = b * 32; j < b * 32 + 32; ++j) {
          const double xv = bf16_x ? bf16_to_f32(f32_to_bf16(xi[j])) : xi[j];
          ref += static_cast<double>(wr[j]) * xv;
          abs_sum += std::fabs(static_cast<double>(wr[j]) * xv);
          block_abs_w += std::fabs(wr[j]);
          amax = std::max(amax, std::fabs(static_cast<double>(xi[j])));
        }
        if (int8_x) activation_error += block_abs_w * amax / 254.0;
      }
      const double tol = activation_error * 1.001 + abs_sum * 1e-5 + 1e-6;
      const float got = y[static_cast<size_t>(i * n + r)];
      ASSERT_NEAR(got, ref, tol) << quant_type_name(w.type()) << " on " << isa_level_name(isa)
                                 << ": x row " << i << " of " << m << ", w row " << r << " of " << n
                                 << ", cols " << k;
    }
  }
}

struct Shape {
  int64_t rows, cols;
};

TEST(PackedMatmul, MatchesReferenceForEveryTypeIsaAndShape) {
  const Shape shapes[] = {{1, 32}, {13, 96}, {8, 256}, {203, 64}, {37, 1024}};
  const int64_t ms[] = {1, 2, 3, 7, 64, 129};
  for_each_gemm_activations([&] {
    for (IsaLevel isa : available_isas()) {
      IsaScope scope(isa);
      for (const Shape& s : shapes) {
        const auto w = random_vector(static_cast<size_t>(s.rows * s.cols), 10, 0.05f);
        const auto bias = random_vector(static_cast<size_t>(s.rows), 11, 1.0f);
        for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4,
                               QuantType::kQ8Strips, QuantType::kQ4Strips}) {
          const auto packed =
              PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), s.rows, s.cols}, type);
          for (int64_t m : ms) {
            if (s.cols >= 1024 && m > 7) continue;  // keeps the double reference fast
            const auto x = random_vector(static_cast<size_t>(m * s.cols), 12 + m, 1.0f);
            std::vector<float> y(static_cast<size_t>(m * s.rows), NAN);
            const float* b = m % 2 ? bias.data() : nullptr;
            matmul(x.data(), m, packed, b, y.data());
            expect_matches_reference(packed, x, m, b, y, isa);
          }
        }
      }
    }
  });
}

TEST(PackedMatmul, BlockedGemmHandlesEveryTail) {
  // k = 1120: 4 full depth blocks of 256 and one of 96; n = 101: two row blocks of 48 and one of
  // 5 (tiles of 6 and a short one); m = 70: panels of 16 with a padded last one (fp32 GEMM; the
  // int8 GEMM's tails are covered in int8_gemm_test.cpp).
  const int64_t n = 101, k = 1120, m = 70;
  const auto w = random_vector(static_cast<size_t>(n * k), 20, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 21, 1.0f);
  const auto bias = random_vector(static_cast<size_t>(n), 22, 1.0f);
  for_each_gemm_activations([&] {
    for (IsaLevel isa : available_isas()) {
      IsaScope scope(isa);
      for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
        const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
        std::vector<float> y(static_cast<size_t>(m * n), NAN);
        matmul(x.data(), m, packed, bias.data(), y.data());
        expect_matches_reference(packed, x, m, bias.data(), y, isa);
      }
    }
  });
}

TEST(PackedMatmul, BatchRowsAgreeWithSingleRows) {
  // Below the GEMM the multi-row kernels must give each row what the m == 1 GEMV gives it, up to
  // fp32 summation order.
  const int64_t n = 21, k = 1120, m = kernels::kGemmMinRows - 1;
  const auto w = random_vector(static_cast<size_t>(n * k), 20, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 21, 1.0f);
  for (IsaLevel isa : available_isas()) {
    IsaScope scope(isa);
    for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
      const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
      std::vector<float> all(static_cast<size_t>(m * n)), one(static_cast<size_t>(n));
      matmul(x.data(), m, packed, nullptr, all.data());
      for (int64_t i = 0; i < m; ++i) {
        matmul(x.data() + i * k, 1, packed, nullptr, one.data());
        for (int64_t r = 0; r < n; ++r) {
          const float a = all[static_cast<size_t>(i * n + r)], b = one[static_cast<size_t>(r)];
          ASSERT_NEAR(a, b, 1e-5f * (1 + std::fabs(b)))
              << quant_type_name(type) << " on " << isa_level_name(isa) << " row " << i;
        }
      }
    }
  }
}

TEST(PackedMatmul, ViewGivesIdenticalResults) {
  const int64_t n = 10, k = 128, m = 3;
  const auto w = random_vector(static_cast<size_t>(n * k), 30, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 31, 1.0f);
  for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    const auto viewed = PackedMatrix::view(type, n, k, packed.bytes(), packed.size_bytes());
    std::vector<float> a(static_cast<size_t>(m * n)), b(a.size());
    matmul(x.data(), m, packed, nullptr, a.data());
    matmul(x.data(), m, viewed, nullptr, b.data());
    EXPECT_EQ(a, b) << quant_type_name(type);
  }
}

TEST(PackedMatmul, ExactDelegatesToTheExactKernel) {
  const int64_t n = 6, k = 50, m = 4;  // any shape works in exact mode
  const auto w = random_vector(static_cast<size_t>(n * k), 40, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 41, 1.0f);
  const auto bias = random_vector(static_cast<size_t>(n), 42, 1.0f);
  const WeightRef ref{WeightType::kF32, w.data(), n, k};
  const auto packed = PackedMatrix::pack(ref, QuantType::kExact);
  std::vector<float> a(static_cast<size_t>(m * n)), b(a.size());
  matmul(x.data(), m, packed, bias.data(), a.data());
  ops::matmul(x.data(), m, ref, bias.data(), b.data());
  EXPECT_EQ(a, b);
}

TEST(PackedMatmul, ActivationQuantizersAgreeBitForBit) {
  if (static_cast<int>(best_isa()) < static_cast<int>(IsaLevel::kAvx2)) GTEST_SKIP();
  const int64_t nb = 40;
  auto x = random_vector(static_cast<size_t>(nb * 32), 50, 1.0f);
  for (int64_t j = 0; j < 32; ++j) x[static_cast<size_t>(32 + j)] = 0.0f;      // zero block
  for (int64_t j = 0; j < 32; ++j) x[static_cast<size_t>(64 + j)] = 0.5f * j;  // ties at .5
  x[100] = NAN;
  x[200] = INFINITY;
  std::vector<int8_t> qa(x.size()), qb(x.size());
  std::vector<float> sa(nb), sb(nb);
  std::vector<int32_t> ua(nb), ub(nb);
  kernels::quantize_row_scalar(x.data(), nb, qa.data(), sa.data(), ua.data());
  kernels::quantize_row_to(x.data(), nb, 127, qb.data(), sb.data(), ub.data());
  EXPECT_EQ(qa, qb);
  EXPECT_EQ(ua, ub);
  EXPECT_EQ(std::memcmp(sa.data(), sb.data(), nb * sizeof(float)), 0);
  for (int8_t q : qa) EXPECT_GE(q, -127);
}

TEST(PackedMatmul, EveryIsaOfTheCpuPassesTheSelfCheck) {
  // best_isa() drops a level whose kernels disagree with the scalar ones at first use.
  EXPECT_EQ(best_isa(), cpu_isa()) << "see the error log";
}

TEST(PackedMatmul, RejectsIsaLevelsTheCpuLacks) {
  // Every level this CPU cannot run (always some: the other architecture's) is refused.
  int refused = 0;
  for (IsaLevel level : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512, IsaLevel::kNeon,
                         IsaLevel::kNeonDotprod, IsaLevel::kNeonI8mm}) {
    if (testing::runs_level(level)) continue;
    try {
      set_isa_override(level);
      ADD_FAILURE() << "expected an error for " << isa_level_name(level);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      ++refused;
    }
    EXPECT_EQ(active_isa(), best_isa());
  }
  EXPECT_GE(refused, 2);
}

}  // namespace
}  // namespace qvl::ops
