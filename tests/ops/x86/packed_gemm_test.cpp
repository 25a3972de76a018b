// Each kernel set of the blocked GEMM (packed_gemm.h), called directly, against a scalar oracle
// that performs the same roundings, on every tail: k not a multiple of the 256 depth block, n not
// a multiple of the 128-row block or of the strip (16 or 32 rows), m not a multiple of the
// register tile's x rows (6 or 12) nor of an x block (32 panels); and each row's result is the
// same bit for bit whatever batch computes it. Kernel sets for ISA levels this CPU lacks are
// skipped (printed).
#include "ops/packed_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/half.h"
#include "ops/isa_test_util.h"
#include "ops/packed_matrix.h"
#include "ops/x86/packed_gemm_x86.h"

namespace qvl::ops {
namespace {

using testing::random_vector;

constexpr float kF32Unit = 0x1p-24f;  // unit roundoff of fp32
constexpr float kBf16Unit = 0x1p-8f;  // unit roundoff of bf16

struct Case {
  int64_t n, k, m;
};
// n: 1 and 5 (one partial strip), 13, 47 (strips of 16 + a partial one), 133 (a block of 128
// and a 5-row block, reaching past the packed row groups); k: 32, 288, 1120 (depth blocks of 256
// + 32 / + 96); m: 16, 17, 33, 70 (partial tiles of 6 and 12 x rows), 200 (two x blocks on
// AVX2).
constexpr Case kCases[] = {{1, 32, 16},    {5, 288, 17},    {13, 288, 33},
                           {47, 1120, 70}, {133, 288, 200}, {133, 1120, 33}};

bool cpu_has(IsaLevel level) {
  return static_cast<int>(cpu_isa()) >= static_cast<int>(level);
}

std::vector<float> dequantized(const PackedMatrix& w) {
  std::vector<float> out(static_cast<size_t>(w.rows() * w.cols()));
  for (int64_t r = 0; r < w.rows(); ++r) w.row_to_f32(r, out.data() + r * w.cols());
  return out;
}

// The fp32 tiles keep one accumulator per output and fuse w * x into it in k order, across
// depth blocks (stored and reloaded exactly), then add the bias: this oracle is bit-exact.
void expect_fp32_kernels_exact(const kernels::GemmKernels& g, QuantType type) {
  for (const Case& c : kCases) {
    const auto w = random_vector(static_cast<size_t>(c.n * c.k), 60, 0.05f);
    const auto x = random_vector(static_cast<size_t>(c.m * c.k), 61, 1.0f);
    const auto bias = random_vector(static_cast<size_t>(c.n), 62, 1.0f);
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), c.n, c.k}, type);
    const std::vector<float> wd = dequantized(packed);
    std::vector<float> y(static_cast<size_t>(c.m * c.n), NAN);
    kernels::gemm(g, x.data(), c.m, packed, bias.data(), y.data());
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t r = 0; r < c.n; ++r) {
        float acc = 0.0f;
        for (int64_t j = 0; j < c.k; ++j) acc = std::fma(wd[r * c.k + j], x[i * c.k + j], acc);
        ASSERT_EQ(y[static_cast<size_t>(i * c.n + r)], acc + bias[r])
            << g.name << " " << quant_type_name(type) << " n=" << c.n << " k=" << c.k
            << " m=" << c.m << " x row " << i << " w row " << r;
      }
    }
  }
}

TEST(PackedGemm, Fp32Avx2TileIsExact) {
  if (!cpu_has(IsaLevel::kAvx2)) GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C";
  for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
    expect_fp32_kernels_exact(kernels::kGemmF32Avx2, type);
  }
}

TEST(PackedGemm, Fp32Avx512TileIsExact) {
  if (!cpu_has(IsaLevel::kAvx512)) {
    GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/BF16/VNNI: f32-avx512 compiled, not run";
  }
  for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
    expect_fp32_kernels_exact(kernels::kGemmF32Avx512, type);
  }
}

// Rows of an m = 300 product against the same rows computed in batches of other sizes and at
// other offsets (so at other places in a register tile, panel and x block): bit for bit equal.
void expect_rows_independent_of_batch(const kernels::GemmKernels& g, QuantType type) {
  const int64_t n = 133, k = 1120, m = 300;
  const auto w = random_vector(static_cast<size_t>(n * k), 90, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 91, 1.0f);
  const auto bias = random_vector(static_cast<size_t>(n), 92, 1.0f);
  const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
  std::vector<float> whole(static_cast<size_t>(m * n));
  kernels::gemm(g, x.data(), m, packed, bias.data(), whole.data());
  struct Batch {
    int64_t offset, rows;
  };
  for (const Batch b : {Batch{0, 16}, Batch{283, 17}, Batch{101, 37}, Batch{7, 64}, Batch{1, 299},
                        Batch{150, 150}}) {
    std::vector<float> part(static_cast<size_t>(b.rows * n));
    kernels::gemm(g, x.data() + b.offset * k, b.rows, packed, bias.data(), part.data());
    for (int64_t i = 0; i < b.rows; ++i) {
      ASSERT_EQ(0, std::memcmp(part.data() + i * n, whole.data() + (b.offset + i) * n,
                               static_cast<size_t>(n) * sizeof(float)))
          << g.name << " " << quant_type_name(type) << ": row " << b.offset + i
          << " differs when computed in a batch of " << b.rows << " from row " << b.offset;
    }
  }
}

TEST(PackedGemm, Fp32Avx2RowsAreIndependentOfTheBatch) {
  if (!cpu_has(IsaLevel::kAvx2)) GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C";
  for (QuantType type : {QuantType::kBF16, QuantType::kQ4}) {
    expect_rows_independent_of_batch(kernels::kGemmF32Avx2, type);
  }
}

TEST(PackedGemm, Avx512RowsAreIndependentOfTheBatch) {
  if (!cpu_has(IsaLevel::kAvx512)) {
    GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/BF16/VNNI: f32-avx512 and bf16-avx512 not run";
  }
  expect_rows_independent_of_batch(kernels::kGemmF32Avx512, QuantType::kQ8);
  expect_rows_independent_of_batch(kernels::kGemmBf16Avx512, QuantType::kBF16);
}

// What vcvtne2ps2bf16 / vdpbf16ps see of an fp32 value: bf16 round-to-nearest-even, denormals
// read as (signed) zero.
float as_bf16_operand(float v) {
  if (std::fabs(v) < FLT_MIN) return std::copysign(0.0f, v);
  return bf16_to_f32(f32_to_bf16(v));
}

struct Bf16Oracle {
  float value;     // the emulated result
  float bound;     // how far another per-instruction rounding of the same sums can move it
  double exact;    // sum of w * x in double with unrounded x (plus bias)
  double abs_sum;  // sum of |w * x|
};

// vdpbf16ps per k pair: acc = fl(fl(acc + w[2q+1] x[2q+1]) + w[2q] x[2q]) (the SDM's order;
// products of two bf16 are exact in fp32). Another rounding inside one instruction (e.g. one
// rounding for both products) changes each step by at most u (|acc| + |products| + |result|),
// which is what `bound` sums.
Bf16Oracle bf16_oracle(const float* w, const float* x, int64_t k, float bias) {
  Bf16Oracle o{0.0f, 0.0f, bias, 0.0};
  for (int64_t j = 0; j < k; j += 2) {
    const float even = as_bf16_operand(w[j]) * as_bf16_operand(x[j]);
    const float odd = as_bf16_operand(w[j + 1]) * as_bf16_operand(x[j + 1]);
    const float before = o.value;
    o.value = (o.value + odd) + even;
    o.bound += 3 * kF32Unit * (std::fabs(before) + std::fabs(odd) + std::fabs(even));
    o.bound += 3 * kF32Unit * std::fabs(o.value);
    for (int64_t t = j; t < j + 2; ++t) {
      o.exact += static_cast<double>(w[t]) * x[t];
      o.abs_sum += std::fabs(static_cast<double>(w[t]) * x[t]);
    }
  }
  o.value += bias;
  o.bound += kF32Unit * std::fabs(o.value);
  return o;
}

TEST(PackedGemm, Bf16Avx512MatchesTheRoundingOracle) {
  if (!cpu_has(IsaLevel::kAvx512)) {
    GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/BF16/VNNI: bf16-avx512 compiled, not run";
  }
  double worst_vs_oracle = 0, worst_vs_exact = 0;  // in units of the bounds
  for (const Case& c : kCases) {
    const auto w = random_vector(static_cast<size_t>(c.n * c.k), 70, 0.05f);
    auto x = random_vector(static_cast<size_t>(c.m * c.k), 71, 1.0f);
    x[1] = 1e-39f;       // a denormal: flushed to zero
    x[2] = 1.00390625f;  // 1 + 2^-8: a tie, rounds to even (1.0)
    const auto bias = random_vector(static_cast<size_t>(c.n), 72, 1.0f);
    const auto packed =
        PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), c.n, c.k}, QuantType::kBF16);
    const std::vector<float> wd = dequantized(packed);
    std::vector<float> y(static_cast<size_t>(c.m * c.n), NAN);
    kernels::gemm(kernels::kGemmBf16Avx512, x.data(), c.m, packed, bias.data(), y.data());
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t r = 0; r < c.n; ++r) {
        const Bf16Oracle o = bf16_oracle(wd.data() + r * c.k, x.data() + i * c.k, c.k, bias[r]);
        const float got = y[static_cast<size_t>(i * c.n + r)];
        const std::string where = "n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
                                  " m=" + std::to_string(c.m) + " x row " + std::to_string(i) +
                                  " w row " + std::to_string(r);
        ASSERT_NEAR(got, o.value, o.bound) << where;
        // Against exact fp32 math: x's bf16 rounding (relative <= 2^-8 per value) plus fp32 sums.
        const double exact_bound = (kBf16Unit + c.k * kF32Unit) * o.abs_sum + 1e-6;
        ASSERT_NEAR(got, o.exact, exact_bound) << where;
        worst_vs_oracle = std::max<double>(worst_vs_oracle, std::fabs(got - o.value) / o.bound);
        worst_vs_exact = std::max(worst_vs_exact, std::fabs(got - o.exact) / exact_bound);
      }
    }
  }
  std::printf("bf16-avx512: worst |y - oracle| = %.3g of its bound, |y - exact| = %.3g of its\n",
              worst_vs_oracle, worst_vs_exact);
}

// The oracle itself must be discriminating: with fp32 x (no bf16 rounding) the results leave its
// bound, so a kernel that skipped or misplaced the rounding would fail the test above.
TEST(PackedGemm, Bf16OracleBoundSeesTheActivationRounding) {
  const int64_t k = 1120, rows = 32;
  int outside = 0;
  for (int64_t r = 0; r < rows; ++r) {
    auto w = random_vector(static_cast<size_t>(k), 80 + static_cast<uint32_t>(r), 0.05f);
    const auto x = random_vector(static_cast<size_t>(k), 200 + static_cast<uint32_t>(r), 1.0f);
    for (float& v : w) v = as_bf16_operand(v);
    const Bf16Oracle o = bf16_oracle(w.data(), x.data(), k, 0.0f);
    float fp32_x = 0.0f;
    for (int64_t j = 0; j < k; ++j) fp32_x = std::fma(w[j], x[j], fp32_x);
    outside += std::fabs(fp32_x - o.value) > o.bound;
  }
  EXPECT_GE(outside, rows * 3 / 4);
}

}  // namespace
}  // namespace qvl::ops
