// Batch invariance of q8/q4 matmul across all its paths: a row of x gets the same bits alone (the
// GEMV), in every small batch (m = 2..15, the run kernels) and in the GEMM (m >= 16, int8 tiles),
// at every ISA level this CPU runs; and of bf16 matmul at the levels whose bf16 GEMV and GEMM do
// the same arithmetic per output (ARM i8mm: BFMMLA in both). This is what makes decode rows mixed
// into a prefill chunk, or a stream joining a batch of any size, produce the tokens it would
// produce alone.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "isa_test_util.h"
#include "ops/int8_gemm.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using testing::available_isas;
using testing::IsaScope;
using testing::random_vector;
using testing::runs_level;

constexpr int64_t kMaxM = 40;  // reaches the GEMM's partial and full x-row tiles

struct Case {
  int64_t n, k;
};
// n not a multiple of 8 or 16 (short groups, pairs and strips), k from one block to a 2B row.
const Case kCases[] = {{37, 32}, {45, 96}, {21, 288}, {13, 2048}};

// Rows of x alone (m = 1) under the active dispatch.
std::vector<float> single_rows(const std::vector<float>& x, const PackedMatrix& w,
                               const float* bias) {
  const int64_t n = w.rows(), k = w.cols();
  std::vector<float> y(static_cast<size_t>(kMaxM * n));
  for (int64_t i = 0; i < kMaxM; ++i) matmul(x.data() + i * k, 1, w, bias, y.data() + i * n);
  return y;
}

std::string where(QuantType type, const Case& c, bool bias, const std::string& path, int64_t m) {
  return std::string(quant_type_name(type)) + " n " + std::to_string(c.n) + " k " +
         std::to_string(c.k) + (bias ? " with bias" : "") + " on " + path + ", m " +
         std::to_string(m);
}

// Calls check(c, type, w, bias, alone) for every case, weight type and bias or none, with x
// [kMaxM, c.k] seeded from `seed` and alone = its rows computed one at a time.
template <typename Check>
void for_each_product(uint32_t seed, const std::vector<QuantType>& types, Check&& check) {
  for (const Case& c : kCases) {
    const auto x = random_vector(static_cast<size_t>(kMaxM * c.k), seed++, 1.0f);
    const auto wf = random_vector(static_cast<size_t>(c.n * c.k), seed++, 0.05f);
    const auto b = random_vector(static_cast<size_t>(c.n), seed++, 1.0f);
    for (QuantType type : types) {
      const auto w = PackedMatrix::pack(WeightRef{WeightType::kF32, wf.data(), c.n, c.k}, type);
      for (bool with_bias : {false, true}) {
        const float* bias = with_bias ? b.data() : nullptr;
        check(c, type, x, w, bias, single_rows(x, w, bias));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

void check_level(IsaLevel isa) {
  IsaScope scope(isa);
  std::vector<QuantType> types = {QuantType::kQ8, QuantType::kQ4};
  if (isa == IsaLevel::kNeonI8mm) types.push_back(QuantType::kBF16);
  for_each_product(500, types,
                   [&](const Case& c, QuantType type, const std::vector<float>& x,
                       const PackedMatrix& w, const float* bias, const std::vector<float>& alone) {
                     for (int64_t m = 2; m <= kMaxM; ++m) {
                       std::vector<float> y(static_cast<size_t>(m * c.n));
                       matmul(x.data(), m, w, bias, y.data());
                       ASSERT_EQ(std::memcmp(y.data(), alone.data(), y.size() * sizeof(float)), 0)
                           << where(type, c, bias != nullptr, isa_level_name(isa), m);
                     }
                   });
}

class BatchInvarianceAtLevel : public ::testing::TestWithParam<IsaLevel> {};

TEST_P(BatchInvarianceAtLevel, RowsAreTheSameAloneInSmallBatchesAndInTheGemm) {
  if (!runs_level(GetParam())) {
    GTEST_SKIP() << "this CPU lacks " << isa_level_name(GetParam()) << ": its kernels not run";
  }
  check_level(GetParam());
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, BatchInvarianceAtLevel, ::testing::ValuesIn(arch_isa_levels()),
                         [](const auto& info) { return std::string(isa_level_name(info.param)); });

// Every int8 GEMM kernel the AVX2 level may use (or that stands in for one, emulated) gives the
// AVX2 GEMV's bits for each of its rows.
TEST(BatchInvariance, Avx2GemmKernelsGiveTheGemvBits) {
  if (!runs_level(IsaLevel::kAvx2)) {
    GTEST_SKIP() << "this CPU lacks AVX2+FMA+F16C: avx2 kernels not run";
  }
  std::vector<Int8GemmKernel> gemms = {Int8GemmKernel::kAvx2, Int8GemmKernel::kAvxVnniEmulated};
  if (cpu_runs_int8_gemm_kernel(Int8GemmKernel::kAvxVnni)) {
    gemms.push_back(Int8GemmKernel::kAvxVnni);
  } else {
    std::printf(
        "[  NOTE    ] this CPU lacks AVX-VNNI: avx-vnni GEMM checked through its AVX2 "
        "emulation only\n");
  }
  IsaScope scope(IsaLevel::kAvx2);
  for_each_product(600, {QuantType::kQ8, QuantType::kQ4},
                   [&](const Case& c, QuantType type, const std::vector<float>& x,
                       const PackedMatrix& w, const float* bias, const std::vector<float>& alone) {
                     for (Int8GemmKernel kernel : gemms) {
                       for (int64_t m : {kernels::kGemmMinRows, kernels::kGemmMinRows + 5, kMaxM}) {
                         std::vector<float> y(static_cast<size_t>(m * c.n));
                         int8_gemm(kernel, x.data(), m, w, bias, y.data());
                         ASSERT_EQ(std::memcmp(y.data(), alone.data(), y.size() * sizeof(float)), 0)
                             << where(type, c, bias != nullptr, int8_gemm_kernel_name(kernel), m);
                       }
                     }
                   });
}

}  // namespace
}  // namespace qvl::ops
