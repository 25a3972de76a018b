// The AVX-512 q8/q4 GEMV and small-batch kernels compute each row as the int8 GEMM does
// (c = fma(float(dot_b), w_scale * x_scale, c) per block): checked bit for bit against that chain
// written out in scalar code, (1) on a scalar model of the AVX-512 intrinsics (runs everywhere:
// the kernels' lane bookkeeping, masks and output order), (2) on the real instructions and (3)
// through matmul at every batch size, GEMM included, where the CPU has AVX-512.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/half.h"
#include "ops/isa_test_util.h"
#include "ops/packed_gemv_shapes.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"
#include "ops/x86/packed_kernels_x86.h"

#ifdef _IMMINTRIN_H_INCLUDED
#error "the AVX-512 model below must not meet the real intrinsics (some are macros)"
#endif

namespace qvl::ops::kernels::avx512_model {
namespace {
#include "avx512_model.inc"
inline void prefetch(const uint8_t*) {}
#include "ops/x86/packed_gemv_avx512_quant.inc"
}  // namespace

// As q8_run_avx512 / q4_run_avx512 in packed_gemv_avx512.cpp.
void q8_run(const GroupRun& w, const QuantX& x, int nx, float* out) {
  quant_run<Q8Format>(w, x, nx, out);
}
void q4_run(const GroupRun& w, const QuantX& x, int nx, float* out) {
  quant_run<Q4Format>(w, x, nx, out);
}

}  // namespace qvl::ops::kernels::avx512_model

namespace qvl::ops {
namespace {

using kernels::GroupRun;
using kernels::kCols;
using kernels::kRows;
using kernels::QuantX;
using testing::random_vector;

// The int8 GEMM's chain per output row (see int8_gemm_avx512.cpp), on GroupRun's layout.
void gemm_chain(const GroupRun& w, const QuantX& x, int nx, bool q8, float* out) {
  const int64_t tile_bytes = q8 ? kernels::kQ8TileBytes : kernels::kQ4TileBytes;
  for (int i = 0; i < nx; ++i) {
    for (int g = 0; g < w.count; ++g) {
      const uint8_t* group = w.first + g * w.group_bytes;
      for (int r = 0; r < kRows; ++r) {
        float c = 0;
        for (int64_t b = 0; b < w.nb; ++b) {
          const uint8_t* row = group + w.scale_bytes + b * tile_bytes + r * tile_bytes / kRows;
          const int8_t* xq = x.q + (i * x.stride_blocks + b) * kCols;
          int32_t dot = 0;
          for (int j = 0; j < kCols; ++j) {
            const int32_t wq =
                q8 ? static_cast<int8_t>(row[j]) : (j < 16 ? row[j] & 0x0f : row[j - 16] >> 4) - 8;
            dot += wq * xq[j];
          }
          uint16_t h;
          std::memcpy(&h, group + b * kernels::kScaleBytes + r * 2, 2);
          const float scale = f16_to_f32(h) * x.scale[i * x.stride_blocks + b];
          c = std::fma(static_cast<float>(dot), scale, c);
        }
        out[(i * w.count + g) * kRows + r] = c;
      }
    }
  }
}

struct QuantRows {
  std::vector<int8_t> q;
  std::vector<float> scale, scaled_sum;
  std::vector<int32_t> sum;
  QuantX view(int64_t nb) const {
    return {q.data(), scale.data(), sum.data(), nb, scaled_sum.data()};
  }
};

QuantRows quantize_rows(const std::vector<float>& x, int64_t rows, int64_t nb) {
  QuantRows r;
  r.q.resize(static_cast<size_t>(rows * nb * kCols));
  r.scale.resize(static_cast<size_t>(rows * nb));
  r.sum.resize(r.scale.size());
  r.scaled_sum.resize(r.scale.size());
  for (int64_t i = 0; i < rows; ++i) {
    kernels::quantize_row_scalar(x.data() + i * nb * kCols, nb, r.q.data() + i * nb * kCols,
                                 r.scale.data() + i * nb, r.sum.data() + i * nb);
  }
  for (size_t b = 0; b < r.scale.size(); ++b) r.scaled_sum[b] = r.scale[b] * r.sum[b];
  return r;
}

struct Shape {
  int count, nx;
};
std::vector<Shape> run_shapes() {
  std::vector<Shape> shapes;
  for (int c = 1; c <= kernels::kMaxRunGroups; ++c) shapes.push_back({c, 1});
  for (int c = 1; c <= kernels::kMaxRunBatchGroups; ++c) {
    for (int nx = 2; nx <= kernels::kMaxRunXRows; ++nx) shapes.push_back({c, nx});
  }
  return shapes;
}

// Every run shape at several depths, random and extreme (|q| = 127 everywhere) inputs: `run`
// gives the chain's bits; the chain itself stays near the scalar oracle.
void check_gemm_chain(kernels::QuantRunKernel q8_run, kernels::QuantRunKernel q4_run,
                      const std::string& what) {
  constexpr int kMaxX = kernels::kMaxRunXRows;
  for (int64_t nb : {1, 2, 3, 9, 33}) {
    for (bool extreme : {false, true}) {
      const int64_t k = nb * kCols, n = kernels::kMaxRunGroups * kRows;
      auto w = random_vector(static_cast<size_t>(n * k), 40 + static_cast<uint32_t>(nb), 0.05f);
      auto x = random_vector(static_cast<size_t>(kMaxX * k), 41, 1.0f);
      if (extreme) {
        for (float& v : w) v = v < 0 ? -1.0f : 1.0f;
        for (float& v : x) v = v < 0 ? -2.0f : 2.0f;
      }
      const QuantRows qx = quantize_rows(x, kMaxX, nb);
      for (QuantType type : {QuantType::kQ8, QuantType::kQ4}) {
        const bool q8 = type == QuantType::kQ8;
        const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
        const GroupRun all{static_cast<const uint8_t*>(packed.bytes()),
                           static_cast<int64_t>(packed_size_bytes(type, kRows, k)),
                           nb * kernels::kScaleBytes, nb, 0};
        for (const Shape& s : run_shapes()) {
          GroupRun run = all;
          run.count = s.count;
          std::vector<float> got(static_cast<size_t>(s.count * s.nx * kRows) + 16, NAN);
          std::vector<float> want(got.size(), NAN), oracle(got.size(), NAN);
          (q8 ? q8_run : q4_run)(run, qx.view(nb), s.nx, got.data());
          gemm_chain(run, qx.view(nb), s.nx, q8, want.data());
          (q8 ? kernels::q8_run_scalar : kernels::q4_run_scalar)(run, qx.view(nb), s.nx,
                                                                 oracle.data());
          const std::string where = what + " " + quant_type_name(type) + ": " +
                                    std::to_string(s.count) + " groups x " + std::to_string(s.nx) +
                                    " rows, nb " + std::to_string(nb) +
                                    (extreme ? ", extreme" : "");
          // Past the outputs stays untouched (the kernels store with masks).
          ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << where;
          for (size_t j = 0; j + 16 < got.size(); ++j) {
            ASSERT_NEAR(want[j], oracle[j], 1e-5f * (1 + std::fabs(oracle[j]) + std::sqrt(k)))
                << where << ", output " << j;
          }
        }
      }
    }
  }
}

TEST(PackedGemvAvx512, ModelOfTheQuantKernelsGivesTheGemmChainOnEveryShape) {
  check_gemm_chain(kernels::avx512_model::q8_run, kernels::avx512_model::q4_run, "avx512 model");
}

// The AVX2 kernels (packed_gemv_avx2_quant.cpp) compute the same chain.
TEST(PackedGemvAvx2, QuantKernelsGiveTheGemmChainOnEveryShape) {
  if (static_cast<int>(best_isa()) < static_cast<int>(IsaLevel::kAvx2)) {
    GTEST_SKIP() << "this CPU lacks AVX2+FMA+F16C: avx2 kernels not run";
  }
  check_gemm_chain(kernels::q8_run_avx2, kernels::q4_run_avx2, "avx2");
}

bool has_avx512() {
  return best_isa() == IsaLevel::kAvx512;
}
constexpr const char* kNoAvx512 =
    "this CPU lacks AVX-512 F/BW/VL/BF16/VNNI: avx512 kernels not run (their code runs on the "
    "scalar model above; best_isa's start-up self-check covers them where they run)";

TEST(PackedGemvAvx512, QuantKernelsGiveTheGemmChainOnEveryShape) {
  if (!has_avx512()) GTEST_SKIP() << kNoAvx512;
  check_gemm_chain(kernels::q8_run_avx512, kernels::q4_run_avx512, "avx512");
}

TEST(PackedGemvAvx512, MatmulRowsAreBitIdenticalAtEveryBatchSize) {
  // GEMV (m = 1), small batches (m < 16) and the int8 GEMM (m >= 16) give a row the same bits,
  // with and without a bias. n = 37: a short last group; k = 544: 17 blocks (the GEMM's depth
  // chunks of 8 blocks and a 1-block tail).
  if (!has_avx512()) GTEST_SKIP() << kNoAvx512;
  const testing::IsaScope scope(IsaLevel::kAvx512);
  const int64_t n = 37, k = 544, max_m = 40;
  const auto w = random_vector(static_cast<size_t>(n * k), 50, 0.05f);
  const auto bias = random_vector(static_cast<size_t>(n), 51, 1.0f);
  const auto x = random_vector(static_cast<size_t>(max_m * k), 52, 1.0f);
  for (QuantType type : {QuantType::kQ8, QuantType::kQ4}) {
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      std::vector<float> single(static_cast<size_t>(max_m * n));
      for (int64_t i = 0; i < max_m; ++i) {
        matmul(x.data() + i * k, 1, packed, b, single.data() + i * n);
      }
      for (int64_t m = 2; m <= max_m; ++m) {
        std::vector<float> batch(static_cast<size_t>(m * n));
        matmul(x.data(), m, packed, b, batch.data());
        ASSERT_EQ(std::memcmp(batch.data(), single.data(), batch.size() * sizeof(float)), 0)
            << quant_type_name(type) << (b ? " with" : " without") << " bias, m " << m;
      }
    }
  }
}

}  // namespace
}  // namespace qvl::ops
