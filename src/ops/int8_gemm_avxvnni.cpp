// AVX-VNNI micro-kernels of the int8 GEMM (256-bit vpdpbusd; Alder Lake and later, Zen 5): the
// layout and blocking of the AVX2 kernels (x rows [1, 4] x 16 weight rows, see
// int8_gemm_avx2.cpp), with vpdpbusd summing 4 unsigned x signed byte products straight into
// int32 (no int16 step, so nothing can saturate):
//   q8: x + 128 (unsigned) times w; the offset is taken off per block as 128 * sum(w) of the row,
//       precomputed when the weights are repacked.
//   q4: the stored nibble q + 8 (unsigned) times x; the offset is taken off as 8 * sum(x).
// Called only when the CPU has AVX-VNNI; no shared inline functions (see packed_kernels.h).
#include <immintrin.h>

#include <cstring>

#include "ops/int8_gemm_kernels.h"

#pragma GCC target("avx2,fma,f16c,avxvnni")

namespace qvl::ops::kernels {
namespace {

constexpr int64_t kNr = 16;
constexpr int64_t kBlockBytes = int8_strip_block_bytes(kNr);

inline __m256i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256i load(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

template <int R, bool Q8>
void tile(const Int8Tile& t) {
  for (int64_t b = 0; b < t.nblocks; ++b) {
    const uint8_t* block = t.strip + b * kBlockBytes;
    __m256i acc[R][2];
    for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int quad = 0; quad < 8; ++quad) {
      const __m256i w0 = load(block + quad * 64), w1 = load(block + quad * 64 + 32);
#pragma GCC unroll 6
      for (int i = 0; i < R; ++i) {
        const int64_t at = i * t.ldx + b * 32 + quad * 4;
        if constexpr (Q8) {
          const __m256i xu = broadcast4(t.xu + at);
          acc[i][0] = _mm256_dpbusd_avx_epi32(acc[i][0], xu, w0);
          acc[i][1] = _mm256_dpbusd_avx_epi32(acc[i][1], xu, w1);
        } else {
          const __m256i xs = broadcast4(t.xq + at);
          acc[i][0] = _mm256_dpbusd_avx_epi32(acc[i][0], w0, xs);
          acc[i][1] = _mm256_dpbusd_avx_epi32(acc[i][1], w1, xs);
        }
      }
    }
    const auto* scales = reinterpret_cast<const float*>(block + 32 * kNr);
    const auto* sums = reinterpret_cast<const int32_t*>(block + 36 * kNr);
    const __m256 s0 = _mm256_loadu_ps(scales), s1 = _mm256_loadu_ps(scales + 8);
    const __m256i w_sum0 = load(reinterpret_cast<const uint8_t*>(sums));
    const __m256i w_sum1 = load(reinterpret_cast<const uint8_t*>(sums + 8));
    for (int i = 0; i < R; ++i) {
      const __m256i x_sum = _mm256_set1_epi32(8 * t.xsum[i * t.ldxs + b]);
      const __m256i d0 = _mm256_sub_epi32(acc[i][0], Q8 ? w_sum0 : x_sum);
      const __m256i d1 = _mm256_sub_epi32(acc[i][1], Q8 ? w_sum1 : x_sum);
      const __m256 sx = _mm256_set1_ps(t.xscale[i * t.ldxs + b]);
      float* c = t.c + i * t.ldc;
      _mm256_storeu_ps(
          c, _mm256_fmadd_ps(_mm256_cvtepi32_ps(d0), _mm256_mul_ps(s0, sx), _mm256_loadu_ps(c)));
      _mm256_storeu_ps(c + 8, _mm256_fmadd_ps(_mm256_cvtepi32_ps(d1), _mm256_mul_ps(s1, sx),
                                              _mm256_loadu_ps(c + 8)));
    }
  }
}

template <bool Q8>
void tile_rows(const Int8Tile& t) {
  switch (t.rows) {
    case 1:
      return tile<1, Q8>(t);
    case 2:
      return tile<2, Q8>(t);
    case 3:
      return tile<3, Q8>(t);
    default:
      return tile<4, Q8>(t);
  }
}

}  // namespace

void int8_tile_q8_avxvnni(const Int8Tile& t) {
  tile_rows<true>(t);
}
void int8_tile_q4_avxvnni(const Int8Tile& t) {
  tile_rows<false>(t);
}

}  // namespace qvl::ops::kernels
