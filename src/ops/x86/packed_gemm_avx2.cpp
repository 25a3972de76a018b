// AVX2 + FMA kernel set of the blocked GEMM (driver and layouts: packed_gemm.h/.cpp): a 6 x 16
// register tile, 6 x rows broadcast against a strip of 16 weight rows held in two vectors: 12
// accumulators + 2 weight vectors + 1 broadcast of the 16 ymm registers, 12 FMAs per 8 loads.
// Called only when the CPU has AVX2/FMA/F16C; no shared inline functions (see packed_kernels.h).
#include <immintrin.h>

#include "ops/packed_gemm.h"
#include "ops/x86/packed_gemm_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

constexpr int kTileX = 6;   // x rows per tile
constexpr int kStrip = 16;  // weight rows per strip

void tile(const void* x_panel, const void* w_strip, int64_t depth, float* y, int64_t ldy,
          bool accumulate) {
  const auto* x = static_cast<const float*>(x_panel);
  const auto* w = static_cast<const float*>(w_strip);
  __m256 acc[kTileX][2];
#pragma GCC unroll 6
  for (int i = 0; i < kTileX; ++i) {
    acc[i][0] = accumulate ? _mm256_loadu_ps(y + i * ldy) : _mm256_setzero_ps();
    acc[i][1] = accumulate ? _mm256_loadu_ps(y + i * ldy + 8) : _mm256_setzero_ps();
  }
#pragma GCC unroll 4
  for (int64_t kk = 0; kk < depth; ++kk) {
    const __m256 w0 = _mm256_load_ps(w + kk * kStrip);
    const __m256 w1 = _mm256_load_ps(w + kk * kStrip + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kTileX; ++i) {
      const __m256 b = _mm256_broadcast_ss(x + kk * kTileX + i);
      acc[i][0] = _mm256_fmadd_ps(b, w0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(b, w1, acc[i][1]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < kTileX; ++i) {
    _mm256_storeu_ps(y + i * ldy, acc[i][0]);
    _mm256_storeu_ps(y + i * ldy + 8, acc[i][1]);
  }
}

}  // namespace

constinit const GemmKernels kGemmF32Avx2{
    "f32-avx2", 4, 4, kTileX, kStrip, pack_x_panel_f32, pack_strips_f32_avx2, tile};

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
