// AVX-512 fp32 kernel set of the blocked GEMM (driver and layouts: packed_gemm.h/.cpp): a 12 x 32
// register tile, 12 x rows broadcast against a strip of 32 weight rows held in two zmm: 24
// accumulators + 2 weight vectors + 1 broadcast of the 32 zmm registers, 24 FMAs per 14 loads.
// Weight strips and x panels are packed by the shared fp32 packers.
// Called only when the CPU has the AVX-512 level (see best_isa); no shared inline functions.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors (__Y = __Y), which -Werror rejects
// once inlined here: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/packed_gemm.h"

#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

constexpr int kTileX = 12;  // x rows per tile
constexpr int kStrip = 32;  // weight rows per strip

void tile(const void* x_panel, const void* w_strip, int64_t depth, float* y, int64_t ldy,
          bool accumulate) {
  const auto* x = static_cast<const float*>(x_panel);
  const auto* w = static_cast<const float*>(w_strip);
  __m512 acc[kTileX][2];
#pragma GCC unroll 12
  for (int i = 0; i < kTileX; ++i) {
    acc[i][0] = accumulate ? _mm512_loadu_ps(y + i * ldy) : _mm512_setzero_ps();
    acc[i][1] = accumulate ? _mm512_loadu_ps(y + i * ldy + 16) : _mm512_setzero_ps();
  }
#pragma GCC unroll 2
  for (int64_t kk = 0; kk < depth; ++kk) {
    const __m512 w0 = _mm512_load_ps(w + kk * kStrip);
    const __m512 w1 = _mm512_load_ps(w + kk * kStrip + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kTileX; ++i) {
      const __m512 b = _mm512_set1_ps(x[kk * kTileX + i]);
      acc[i][0] = _mm512_fmadd_ps(b, w0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(b, w1, acc[i][1]);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < kTileX; ++i) {
    _mm512_storeu_ps(y + i * ldy, acc[i][0]);
    _mm512_storeu_ps(y + i * ldy + 16, acc[i][1]);
  }
}

}  // namespace

constinit const GemmKernels kGemmF32Avx512{
    "f32-avx512", 4, 4, kTileX, kStrip, pack_x_panel_f32, pack_strips_f32_avx2, tile};

}  // namespace qvl::ops::kernels
