// The AVX-512 kernel sets of the blocked GEMM (fp32 tile: packed_gemm_avx512_tile.inc; bf16 x
// packer and vdpbf16ps tile: packed_gemm_bf16_avx512_tile.inc), compiled on the scalar model of
// the AVX-512 intrinsics (avx512_model.inc) and run by the real driver (kernels::gemm with the
// real strip packers), against each output's chain written out in scalar code, bit for bit, on
// every tail shape the driver produces; and near the fp32 product. Where the CPU has AVX-512, the
// real kernel sets get the same checks (bf16 with a tolerance: see _mm512_dpbf16_ps in the model).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/half.h"
#include "ops/isa_test_util.h"
#include "ops/packed_gemm.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"
#include "ops/x86/packed_gemm_x86.h"

#ifdef _IMMINTRIN_H_INCLUDED
#error "the AVX-512 model below must not meet the real intrinsics (some are macros)"
#endif

namespace qvl::ops::kernels::avx512_gemm_model {
namespace {
#include "avx512_model.inc"
}  // namespace
namespace f32 {
namespace {
#include "ops/x86/packed_gemm_avx512_tile.inc"
}  // namespace
}  // namespace f32
namespace bf16 {
namespace {
#include "ops/x86/packed_gemm_bf16_avx512_tile.inc"
}  // namespace
}  // namespace bf16

// The real kernel sets with the model-compiled parts in place of the AVX-512 ones.
GemmKernels f32_kernels() {
  GemmKernels g = kGemmF32Avx512;
  g.tile = f32::tile;
  return g;
}
GemmKernels bf16_kernels() {
  GemmKernels g = kGemmBf16Avx512;
  g.pack_x_panel = bf16::pack_x_panel;
  g.tile = bf16::tile;
  return g;
}

}  // namespace qvl::ops::kernels::avx512_gemm_model

namespace qvl::ops {
namespace {

using testing::random_vector;

std::vector<float> dequantized(const PackedMatrix& w) {
  std::vector<float> wd(static_cast<size_t>(w.rows() * w.cols()));
  for (int64_t r = 0; r < w.rows(); ++r) w.row_to_f32(r, wd.data() + r * w.cols());
  return wd;
}

// Per output: acc = 0, then in k order acc = fma(x, w, acc) (fp32); or for bf16 weights on the
// bf16 kernel set, x rounded to bf16 and per column pair (2q, 2q + 1) the odd product first, then
// the even one (vdpbf16ps); y = acc + bias.
std::vector<float> gemm_chain(const std::vector<float>& x, int64_t m, const PackedMatrix& w,
                              const float* bias, bool bf16_pairs) {
  const int64_t n = w.rows(), k = w.cols();
  const std::vector<float> wd = dequantized(w);
  std::vector<float> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    std::vector<float> xi(x.begin() + i * k, x.begin() + (i + 1) * k);
    if (bf16_pairs) {
      for (float& v : xi) v = bf16_to_f32(f32_to_bf16(v));
    }
    for (int64_t r = 0; r < n; ++r) {
      const float* wr = wd.data() + r * k;
      float acc = 0;
      for (int64_t c = 0; c < k; c += bf16_pairs ? 2 : 1) {
        if (bf16_pairs) {
          acc = std::fma(wr[c + 1], xi[static_cast<size_t>(c + 1)], acc);
          acc = std::fma(wr[c], xi[static_cast<size_t>(c)], acc);
        } else {
          acc = std::fma(xi[static_cast<size_t>(c)], wr[c], acc);
        }
      }
      y[static_cast<size_t>(i * n + r)] = bias ? acc + bias[r] : acc;
    }
  }
  return y;
}

// Depths: one block, exactly one depth block of 256, 256 + 32, 2 * 256 + 32; weight rows: one, a
// partial strip of 32, a strip, a strip and a partial one, a row block of 128, a partial second
// one; x rows: every tail of the 12-row tile, and 2 x blocks of 32 panels with a partial panel.
// With and without a bias. `exact`: bit for bit against the chain, else within a few ulps of
// the sum of |terms|.
void check_every_shape(const kernels::GemmKernels& g, QuantType type, bool bf16_pairs, bool exact,
                       const std::string& what) {
  struct Shape {
    int64_t n, k, m;
  };
  std::vector<Shape> shapes;
  for (int64_t k : {32, 256, 288, 544}) {
    for (int64_t n : {1, 20, 32, 42, 128, 170}) shapes.push_back({n, k, 13});
  }
  for (int64_t m = 1; m <= 12; ++m) shapes.push_back({42, 288, m});
  shapes.push_back({37, 64, 12 * 32 + 29});
  for (const Shape& s : shapes) {
    const auto w =
        random_vector(static_cast<size_t>(s.n * s.k), 70 + static_cast<uint32_t>(s.n), 0.05f);
    const auto x =
        random_vector(static_cast<size_t>(s.m * s.k), 71 + static_cast<uint32_t>(s.k), 1.0f);
    const auto bias = random_vector(static_cast<size_t>(s.n), 72, 1.0f);
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), s.n, s.k}, type);
    const std::vector<float> wd = dequantized(packed);
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      const std::vector<float> want = gemm_chain(x, s.m, packed, b, bf16_pairs);
      std::vector<float> got(want.size(), NAN);
      kernels::gemm(g, x.data(), s.m, packed, b, got.data());
      const std::string where = what + " " + quant_type_name(type) + ": n " + std::to_string(s.n) +
                                ", k " + std::to_string(s.k) + ", m " + std::to_string(s.m) +
                                (b ? ", bias" : "");
      for (size_t j = 0; j < want.size(); ++j) {
        const int64_t i = static_cast<int64_t>(j) / s.n, r = static_cast<int64_t>(j) % s.n;
        if (exact) {
          ASSERT_EQ(std::memcmp(&got[j], &want[j], 4), 0)
              << where << ": y[" << i << "][" << r << "] = " << got[j] << " vs " << want[j];
          continue;
        }
        double bound = 1e-6;
        for (int64_t c = 0; c < s.k; ++c) {
          bound += 4e-6 * std::fabs(static_cast<double>(wd[static_cast<size_t>(r * s.k + c)]) *
                                    x[static_cast<size_t>(i * s.k + c)]);
        }
        ASSERT_NEAR(got[j], want[j], bound) << where << ": y[" << i << "][" << r << "]";
      }
    }
  }
}

TEST(PackedGemmAvx512Model, F32TileThroughTheDriverGivesTheFmaChainOnEveryShape) {
  for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
    check_every_shape(kernels::avx512_gemm_model::f32_kernels(), type, false, true,
                      "f32 avx512 model");
  }
}

TEST(PackedGemmAvx512Model, Bf16TileThroughTheDriverGivesTheVdpbf16psChainOnEveryShape) {
  check_every_shape(kernels::avx512_gemm_model::bf16_kernels(), QuantType::kBF16, true, true,
                    "bf16 avx512 model");
}

// The bf16 chain itself (x rounded to bf16) stays near the fp32 product: relative 2^-8 per
// activation at most.
TEST(PackedGemmAvx512Model, Bf16ChainStaysNearTheFp32Product) {
  const int64_t n = 42, k = 544, m = 13;
  const auto w = random_vector(static_cast<size_t>(n * k), 73, 0.05f);
  const auto x = random_vector(static_cast<size_t>(m * k), 74, 1.0f);
  const auto packed =
      PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, QuantType::kBF16);
  const std::vector<float> wd = dequantized(packed);
  const std::vector<float> bf16 = gemm_chain(x, m, packed, nullptr, true);
  const std::vector<float> f32 = gemm_chain(x, m, packed, nullptr, false);
  for (size_t j = 0; j < f32.size(); ++j) {
    const int64_t i = static_cast<int64_t>(j) / n, r = static_cast<int64_t>(j) % n;
    double bound = 1e-6;
    for (int64_t c = 0; c < k; ++c) {
      bound += (1.0 / 256) * std::fabs(static_cast<double>(wd[static_cast<size_t>(r * k + c)]) *
                                       x[static_cast<size_t>(i * k + c)]);
    }
    ASSERT_NEAR(bf16[j], f32[j], bound) << "y[" << i << "][" << r << "]";
  }
}

constexpr const char* kNoAvx512 =
    "this CPU lacks AVX-512 F/BW/VL/BF16/VNNI: the real avx512 GEMM kernel sets not run (their "
    "source runs on the model above)";

TEST(PackedGemmAvx512, RealF32TileGivesTheFmaChainOnEveryShape) {
  if (best_isa() != IsaLevel::kAvx512) GTEST_SKIP() << kNoAvx512;
  for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
    check_every_shape(kernels::kGemmF32Avx512, type, false, true, "f32 avx512");
  }
}

TEST(PackedGemmAvx512, RealBf16TileGivesTheVdpbf16psChainWithinRounding) {
  if (best_isa() != IsaLevel::kAvx512) GTEST_SKIP() << kNoAvx512;
  check_every_shape(kernels::kGemmBf16Avx512, QuantType::kBF16, true, false, "bf16 avx512");
}

}  // namespace
}  // namespace qvl::ops
