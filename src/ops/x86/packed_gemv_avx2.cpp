// Whole-row bf16 GEMV and small-batch kernels, AVX2 + FMA + F16C (see GroupRun in
// packed_kernels.h; q8 and q4 are in packed_gemv_avx2_quant.cpp).
// Called only when the CPU has them (see best_isa); this file must not define or instantiate any
// inline function from a shared header (see packed_kernels.h).
//
// Each kernel is a template over G groups x X rows of x whose inner step for one (x row, group)
// pair is the same for every G and X, so results do not depend on the batch. The GEMV (X = 1)
// takes several groups per x block: the x work (loads, |x|, scale) is shared and several weight
// streams are in flight. Per-row sums stay in vector accumulators until the end of the row, where
// 4 rows are reduced at once.
#include <immintrin.h>

#include "ops/packed_gemv_shapes.h"
#include "ops/packed_kernels.h"
#include "ops/x86/packed_kernels_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

// Weight prefetch distance: the same block of the groups the next call will read (G groups on).
// Measured on Zen 3 (2 threads, 2B shapes): 1 KB ahead in each group's own stream left q4 at ~65%
// and q8 at ~83% of the DRAM read rate; this distance streams at 90-100% for q4, q8 and bf16.
template <int G>
int64_t ahead_bytes(const GroupRun& w) {
  return G * w.group_bytes;
}

inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
}

inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// [sum(a0), sum(a1), sum(a2), sum(a3)] of four 8-lane accumulators.
inline __m128 reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

template <int G, int X>
void bf16_rows(const GroupRun& w, const float* x, size_t x_stride, float* out) {
  const int64_t distance = ahead_bytes<G>(w);
  const __m256i high_half = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  __m256 acc[X][G][kRows];
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) {
      for (int r = 0; r < kRows; ++r) acc[i][g][r] = _mm256_setzero_ps();
    }
  }
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile[G];
    for (int g = 0; g < G; ++g) {
      tile[g] = w.first + g * w.group_bytes + b * kBf16TileBytes;
      for (int64_t line = 0; line < kBf16TileBytes; line += 64) prefetch(tile[g] + distance + line);
    }
    // x is fp32 with each 16 columns as 8 even then 8 odd ones; bf16 even/odd halves of a 32-bit
    // weight pair become fp32 by a shift / a mask. Per accumulator: c0 even, c0 odd, c1 even, ...
    if constexpr (X == 1) {  // each weight vector loaded once: both halves at a time
      for (int c = 0; c < 2; ++c) {
        const __m256 xe = _mm256_loadu_ps(x + b * kCols + c * 16);
        const __m256 xo = _mm256_loadu_ps(x + b * kCols + c * 16 + 8);
        for (int g = 0; g < G; ++g) {
          for (int r = 0; r < kRows; ++r) {
            const __m256i v = load256(tile[g] + r * 64 + c * 32);
            acc[0][g][r] =
                _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v, 16)), xe, acc[0][g][r]);
            acc[0][g][r] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v, high_half)), xo,
                                           acc[0][g][r]);
          }
        }
      }
      continue;
    }
    for (int half = 0; half < 4; ++half) {  // x rows in registers, weights re-read from L1
      const int c = half / 2;
      const bool odd = half % 2 == 1;
      const int64_t col = b * kCols + c * 16 + (odd ? 8 : 0);
      __m256 xv[X];
      for (int i = 0; i < X; ++i) xv[i] = _mm256_loadu_ps(x + i * x_stride + col);
      for (int g = 0; g < G; ++g) {
        for (int r = 0; r < kRows; ++r) {
          const __m256i v = load256(tile[g] + r * 64 + c * 32);
          const __m256 wv =
              _mm256_castsi256_ps(odd ? _mm256_and_si256(v, high_half) : _mm256_slli_epi32(v, 16));
          for (int i = 0; i < X; ++i) acc[i][g][r] = _mm256_fmadd_ps(wv, xv[i], acc[i][g][r]);
        }
      }
    }
  }
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) {
      _mm_storeu_ps(out + (i * G + g) * kRows,
                    reduce4(acc[i][g][0], acc[i][g][1], acc[i][g][2], acc[i][g][3]));
    }
  }
}

}  // namespace

void bf16_run_avx2(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out) {
  const auto* xf = static_cast<const float*>(x);
  const size_t stride = x_stride / sizeof(float);
  // 2 groups x 4 rows, or 3 x rows x 4 rows, of fp32 accumulators fill the 16 registers.
  for_run_shapes<2, 3, 1>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    bf16_rows<G, X>(part, xf + i0 * stride, stride, o);
  });
}

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
