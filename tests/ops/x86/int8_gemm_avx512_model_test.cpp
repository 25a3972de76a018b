// The AVX-512 VNNI micro-kernel of the int8 GEMM (src/ops/int8_gemm_avx512_tile.inc), compiled on
// the scalar model of the AVX-512 intrinsics (avx512_model.inc) and driven by the real int8 GEMM
// driver (int8_gemm_with_tile: the strips and x tiles the driver builds for kAvx512Vnni), against
// the int8 GEMM's chain written out in scalar code, bit for bit, on every tail shape the driver
// produces. Where the CPU has AVX-512, the real kernel gets the same check.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/half.h"
#include "ops/int8_gemm.h"
#include "ops/int8_gemm_kernels.h"
#include "ops/isa_test_util.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

#ifdef _IMMINTRIN_H_INCLUDED
#error "the AVX-512 model below must not meet the real intrinsics (some are macros)"
#endif

namespace qvl::ops::kernels::avx512_int8_model {
namespace {
#include "avx512_model.inc"
#include "ops/x86/int8_gemm_avx512_tile.inc"
}  // namespace

// As int8_tile_q8_avx512 / _q4_ / _q8s_ / _q4s_avx512 in int8_gemm_avx512.cpp.
void q8_tile(const Int8Tile& t) {
  tile_rows<Weights::kQ8>(t);
}
void q4_tile(const Int8Tile& t) {
  tile_rows<Weights::kQ4>(t);
}
void q8s_tile(const Int8Tile& t) {
  tile_rows<Weights::kStoredQ8>(t);
}
void q4s_tile(const Int8Tile& t) {
  tile_rows<Weights::kStoredQ4>(t);
}

}  // namespace qvl::ops::kernels::avx512_int8_model

namespace qvl::ops {
namespace {

using kernels::kCols;
using kernels::kRows;
using testing::random_vector;

// The int8 GEMM's chain per output (x row i, weight row r): x quantized per block of 32
// (quantize_row_scalar), c = 0, then per block b in order c = fma(float(dot_b), w_scale_b *
// x_scale_b, c) with dot_b the exact int32 dot product; y = c + bias.
std::vector<float> int8_chain(const std::vector<float>& x, int64_t m, const PackedMatrix& w,
                              const float* bias) {
  const bool q8 = w.type() == QuantType::kQ8;
  const int64_t n = w.rows(), k = w.cols(), nb = k / kCols;
  const auto* bytes = static_cast<const uint8_t*>(w.bytes());
  const auto group_bytes = static_cast<int64_t>(packed_size_bytes(w.type(), kRows, k));
  const int64_t tile_bytes = q8 ? kernels::kQ8TileBytes : kernels::kQ4TileBytes;
  std::vector<int8_t> q(static_cast<size_t>(k));
  std::vector<float> scale(static_cast<size_t>(nb));
  std::vector<int32_t> sum(static_cast<size_t>(nb));
  std::vector<float> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    kernels::quantize_row_scalar(x.data() + i * k, nb, q.data(), scale.data(), sum.data());
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* group = bytes + (r / kRows) * group_bytes;
      float c = 0;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* row =
            group + nb * kernels::kScaleBytes + b * tile_bytes + (r % kRows) * tile_bytes / kRows;
        int32_t dot = 0;
        for (int64_t j = 0; j < kCols; ++j) {
          const int32_t wq =
              q8 ? static_cast<int8_t>(row[j]) : (j < 16 ? row[j] & 0x0f : row[j - 16] >> 4) - 8;
          dot += wq * q[static_cast<size_t>(b * kCols + j)];
        }
        uint16_t h;
        std::memcpy(&h, group + b * kernels::kScaleBytes + (r % kRows) * 2, 2);
        c = std::fma(static_cast<float>(dot), f16_to_f32(h) * scale[static_cast<size_t>(b)], c);
      }
      y[static_cast<size_t>(i * n + r)] = bias ? c + bias[r] : c;
    }
  }
  return y;
}

using RunGemm = void (*)(QuantType type, const float* x, int64_t m, const PackedMatrix& w,
                         const float* bias, float* y);

// Depths: one block, exactly one chunk of 8 blocks, a chunk and a 1-block tail, 2 chunks and a
// tail; weight rows: one, a partial strip of 32, exactly a strip, a strip and a partial one, a
// row block of 64 and a partial second one; x rows: every tail of the 6-row tile, and 2 x blocks
// of 256 rows with a partial tile. Random and extreme (|q| = 127, q4 +-7) inputs, with and
// without a bias. kQ8Strips / kQ4Strips (read in place by the VNNI kernels, repacked by others)
// hold the kQ8 / kQ4 values: their chain is the groups', bit for bit.
void check_every_shape(RunGemm run, const std::string& what) {
  struct Shape {
    int64_t n, k, m;
  };
  std::vector<Shape> shapes;
  for (int64_t k : {32, 256, 288, 544}) {
    for (int64_t n : {1, 20, 32, 42, 64, 100}) shapes.push_back({n, k, 13});
  }
  for (int64_t m = 1; m <= 12; ++m) shapes.push_back({42, 288, m});
  shapes.push_back({37, 96, 263});
  for (const Shape& s : shapes) {
    for (bool extreme : {false, true}) {
      auto w =
          random_vector(static_cast<size_t>(s.n * s.k), 60 + static_cast<uint32_t>(s.n), 0.05f);
      auto x = random_vector(static_cast<size_t>(s.m * s.k), 61 + static_cast<uint32_t>(s.k), 1.0f);
      if (extreme) {
        for (float& v : w) v = v < 0 ? -1.0f : 1.0f;
        for (float& v : x) v = v < 0 ? -2.0f : 2.0f;
      }
      const auto bias = random_vector(static_cast<size_t>(s.n), 62, 1.0f);
      for (QuantType type :
           {QuantType::kQ8, QuantType::kQ4, QuantType::kQ8Strips, QuantType::kQ4Strips}) {
        const WeightRef source{WeightType::kF32, w.data(), s.n, s.k};
        const auto packed = PackedMatrix::pack(source, type);
        const auto chain_of = in_strips(type) ? PackedMatrix::pack(source, values_type(type))
                                              : PackedMatrix::view(type, s.n, s.k, packed.bytes(),
                                                                   packed.size_bytes());
        for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
          const std::vector<float> want = int8_chain(x, s.m, chain_of, b);
          std::vector<float> got(want.size(), NAN);
          run(type, x.data(), s.m, packed, b, got.data());
          const std::string where = what + " " + quant_type_name(type) + ": n " +
                                    std::to_string(s.n) + ", k " + std::to_string(s.k) + ", m " +
                                    std::to_string(s.m) + (extreme ? ", extreme" : "") +
                                    (b ? ", bias" : "");
          for (size_t j = 0; j < want.size(); ++j) {
            ASSERT_EQ(std::memcmp(&got[j], &want[j], 4), 0)
                << where << ": y[" << j / s.n << "][" << j % s.n << "] = " << got[j] << " vs "
                << want[j];
          }
        }
      }
    }
  }
}

bool has_avx2() {
  return static_cast<int>(cpu_isa()) >= static_cast<int>(IsaLevel::kAvx2);
}

TEST(Int8GemmAvx512Model, TileThroughTheDriverGivesTheChainOnEveryShape) {
  if (!has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2: the int8 GEMM driver needs it";
  check_every_shape(
      [](QuantType type, const float* x, int64_t m, const PackedMatrix& w, const float* bias,
         float* y) {
        namespace model = kernels::avx512_int8_model;
        int8_gemm_with_tile(Int8GemmKernel::kAvx512Vnni,
                            type == QuantType::kQ8         ? model::q8_tile
                            : type == QuantType::kQ4       ? model::q4_tile
                            : type == QuantType::kQ8Strips ? model::q8s_tile
                                                           : model::q4s_tile,
                            x, m, w, bias, y);
      },
      "avx512 model");
}

// The AVX-VNNI tile (int8_gemm_vnni256_tile.h) with vpdpbusd emulated in AVX2 computes the same
// chain: so the 256-bit and 512-bit VNNI kernels agree bit for bit.
TEST(Int8GemmAvx512Model, EmulatedAvxVnniTileGivesTheSameChain) {
  if (!has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2: the emulated AVX-VNNI kernel needs it";
  check_every_shape(
      [](QuantType, const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y) {
        int8_gemm(Int8GemmKernel::kAvxVnniEmulated, x, m, w, bias, y);
      },
      "avx-vnni emulated");
}

TEST(Int8GemmAvx512, RealTileGivesTheChainOnEveryShape) {
  if (!cpu_runs_int8_gemm_kernel(Int8GemmKernel::kAvx512Vnni)) {
    GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/BF16/VNNI: the real avx512-vnni tile not run "
                    "(its source runs on the model above)";
  }
  check_every_shape(
      [](QuantType, const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y) {
        int8_gemm(Int8GemmKernel::kAvx512Vnni, x, m, w, bias, y);
      },
      "avx512");
}

TEST(Int8GemmAvxVnni, RealTileGivesTheChainOnEveryShape) {
  if (!cpu_runs_int8_gemm_kernel(Int8GemmKernel::kAvxVnni)) {
    GTEST_SKIP() << "this CPU lacks AVX-VNNI: the real avx-vnni tile not run (its source runs "
                    "with an emulated vpdpbusd above)";
  }
  check_every_shape(
      [](QuantType, const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y) {
        int8_gemm(Int8GemmKernel::kAvxVnni, x, m, w, bias, y);
      },
      "avx-vnni");
}

}  // namespace
}  // namespace qvl::ops
