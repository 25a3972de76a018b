// The AVX-512 bf16 GEMV / small-batch kernels (src/ops/packed_gemv_avx512_bf16.inc), compiled on
// the scalar model of the AVX-512 intrinsics (avx512_model.inc) and run through the same run-shape
// dispatch as bf16_run_avx512, against each output's chain written out in scalar code, bit for
// bit, on every run shape; and near the scalar oracle. Where the CPU has AVX-512, the real kernels
// get the same checks (with a tolerance: see _mm512_dpbf16_ps in the model).
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

namespace qvl::ops::kernels::avx512_bf16_model {
namespace {
#include "avx512_model.inc"
inline void prefetch(const uint8_t*) {}
#include "ops/x86/packed_gemv_avx512_bf16.inc"
}  // namespace

// As bf16_run_avx512 in packed_gemv_avx512.cpp.
void bf16_run_model(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out) {
  bf16_run(w, x, x_stride, nx, out);
}

}  // namespace qvl::ops::kernels::avx512_bf16_model

namespace qvl::ops {
namespace {

using kernels::GroupRun;
using kernels::kCols;
using kernels::kRows;
using testing::random_vector;

// Per (x row i, group g, weight row r): 16 fp32 lanes, lane j taking columns 2j + 1 then 2j of
// every block in block order (fma each: vdpbf16ps), then summed in lane order from 0.
void bf16_chain(const GroupRun& w, const uint16_t* x, size_t x_stride_values, int nx, float* out) {
  for (int i = 0; i < nx; ++i) {
    for (int g = 0; g < w.count; ++g) {
      for (int r = 0; r < kRows; ++r) {
        float lane[16] = {};
        for (int64_t b = 0; b < w.nb; ++b) {
          const uint8_t* row = w.first + g * w.group_bytes + b * kernels::kBf16TileBytes + r * 64;
          const uint16_t* xb = x + i * x_stride_values + b * kCols;
          for (int j = 0; j < 16; ++j) {
            for (int c : {2 * j + 1, 2 * j}) {
              uint16_t h;
              std::memcpy(&h, row + 2 * c, 2);
              lane[j] = std::fma(bf16_to_f32(h), bf16_to_f32(xb[c]), lane[j]);
            }
          }
        }
        float s = 0;
        for (float v : lane) s += v;
        out[(i * w.count + g) * kRows + r] = s;
      }
    }
  }
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

// Every run shape at several depths; x rows 32 values (64 bytes) apart past their end, so a kernel
// that ignores x_stride fails. `exact`: bit for bit against the chain; always within bf16 rounding
// of the scalar oracle (fp32 x).
void check_every_shape(kernels::Bf16RunKernel run, bool exact, const std::string& what) {
  constexpr int kMaxX = kernels::kMaxRunXRows;
  for (int64_t nb : {1, 2, 3, 9, 33}) {
    const int64_t k = nb * kCols, n = kernels::kMaxRunGroups * kRows, stride = k + 32;
    const auto w = random_vector(static_cast<size_t>(n * k), 80 + static_cast<uint32_t>(nb), 0.05f);
    const auto x = random_vector(static_cast<size_t>(kMaxX * stride), 81, 1.0f);
    std::vector<uint16_t> xb(x.size());
    std::vector<float> xf(x.size());  // x as the bf16 kernels see it
    for (size_t j = 0; j < x.size(); ++j) {
      xb[j] = f32_to_bf16(x[j]);
      xf[j] = bf16_to_f32(xb[j]);
    }
    const auto packed =
        PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, QuantType::kBF16);
    const GroupRun all{static_cast<const uint8_t*>(packed.bytes()),
                       static_cast<int64_t>(packed_size_bytes(QuantType::kBF16, kRows, k)), 0, nb,
                       0};
    for (const Shape& s : run_shapes()) {
      GroupRun part = all;
      part.count = s.count;
      std::vector<float> got(static_cast<size_t>(s.count * s.nx * kRows) + 16, NAN);
      std::vector<float> want(got.size(), NAN), oracle(got.size(), NAN);
      run(part, xb.data(), static_cast<size_t>(stride) * 2, s.nx, got.data());
      bf16_chain(part, xb.data(), static_cast<size_t>(stride), s.nx, want.data());
      kernels::bf16_run_scalar(part, xf.data(), static_cast<size_t>(stride) * 4, s.nx,
                               oracle.data());
      const std::string where = what + ": " + std::to_string(s.count) + " groups x " +
                                std::to_string(s.nx) + " rows, nb " + std::to_string(nb);
      // Past the outputs stays untouched.
      for (size_t j = got.size() - 16; j < got.size(); ++j)
        ASSERT_TRUE(std::isnan(got[j])) << where;
      for (size_t j = 0; j + 16 < got.size(); ++j) {
        if (exact) {
          ASSERT_EQ(std::memcmp(&got[j], &want[j], 4), 0)
              << where << ", output " << j << ": " << got[j] << " vs " << want[j];
        }
        ASSERT_NEAR(got[j], oracle[j], 1e-5f * (1 + std::fabs(oracle[j]) + std::sqrt(k)))
            << where << ", output " << j;
      }
    }
  }
}

TEST(PackedGemvAvx512Model, Bf16KernelsGiveTheVdpbf16psChainOnEveryShape) {
  check_every_shape(kernels::avx512_bf16_model::bf16_run_model, true, "bf16 avx512 model");
}

TEST(PackedGemvAvx512, RealBf16KernelsGiveTheChainWithinRounding) {
  if (best_isa() != IsaLevel::kAvx512) {
    GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/BF16/VNNI: the real bf16 avx512 kernels not "
                    "run (their source runs on the model above)";
  }
  check_every_shape(kernels::bf16_run_avx512, false, "bf16 avx512");
}

}  // namespace
}  // namespace qvl::ops
