// AVX-512 VNNI micro-kernels of the int8 GEMM: x rows [1, 6] x 32 weight rows (two vectors of 16
// rows, 4 columns per 32-bit lane), 512-bit vpdpbusd into int32 with the operand choice of the
// AVX-VNNI kernels (q8: x + 128 times w, less 128 * sum(w); q4: nibble q + 8 times x, less
// 8 * sum(x); see int8_gemm_avxvnni.cpp). The fp32 outputs stay in registers for the whole chunk
// (12 int32 + 12 fp32 accumulators of the 32 registers).
// Called only when the CPU has the IsaLevel::kAvx512 set; no shared inline functions.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors (__Y = __Y), which -Werror rejects
// once inlined here: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "ops/int8_gemm_kernels.h"

#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

constexpr int64_t kNr = 32;
constexpr int64_t kBlockBytes = int8_strip_block_bytes(kNr);

inline __m512i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

template <int R, bool Q8>
void tile(const Int8Tile& t) {
  __m512 out[R][2];
  for (int i = 0; i < R; ++i) {
    out[i][0] = _mm512_loadu_ps(t.c + i * t.ldc);
    out[i][1] = _mm512_loadu_ps(t.c + i * t.ldc + 16);
  }
  for (int64_t b = 0; b < t.nblocks; ++b) {
    const uint8_t* block = t.strip + b * kBlockBytes;
    __m512i acc[R][2];
    for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int quad = 0; quad < 8; ++quad) {
      const __m512i w0 = _mm512_loadu_si512(block + quad * 128);
      const __m512i w1 = _mm512_loadu_si512(block + quad * 128 + 64);
#pragma GCC unroll 6
      for (int i = 0; i < R; ++i) {
        const int64_t at = i * t.ldx + b * 32 + quad * 4;
        if constexpr (Q8) {
          const __m512i xu = broadcast4(t.xu + at);
          acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], xu, w0);
          acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], xu, w1);
        } else {
          const __m512i xs = broadcast4(t.xq + at);
          acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], w0, xs);
          acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], w1, xs);
        }
      }
    }
    const auto* scales = reinterpret_cast<const float*>(block + 32 * kNr);
    const auto* sums = reinterpret_cast<const int32_t*>(block + 36 * kNr);
    const __m512 s0 = _mm512_loadu_ps(scales), s1 = _mm512_loadu_ps(scales + 16);
    const __m512i w_sum0 = _mm512_loadu_si512(sums), w_sum1 = _mm512_loadu_si512(sums + 16);
    for (int i = 0; i < R; ++i) {
      const __m512i x_sum = _mm512_set1_epi32(8 * t.xsum[i * t.ldxs + b]);
      const __m512i d0 = _mm512_sub_epi32(acc[i][0], Q8 ? w_sum0 : x_sum);
      const __m512i d1 = _mm512_sub_epi32(acc[i][1], Q8 ? w_sum1 : x_sum);
      const __m512 sx = _mm512_set1_ps(t.xscale[i * t.ldxs + b]);
      out[i][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0), _mm512_mul_ps(s0, sx), out[i][0]);
      out[i][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d1), _mm512_mul_ps(s1, sx), out[i][1]);
    }
  }
  for (int i = 0; i < R; ++i) {
    _mm512_storeu_ps(t.c + i * t.ldc, out[i][0]);
    _mm512_storeu_ps(t.c + i * t.ldc + 16, out[i][1]);
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
    case 4:
      return tile<4, Q8>(t);
    case 5:
      return tile<5, Q8>(t);
    default:
      return tile<6, Q8>(t);
  }
}

}  // namespace

void int8_tile_q8_avx512(const Int8Tile& t) {
  tile_rows<true>(t);
}
void int8_tile_q4_avx512(const Int8Tile& t) {
  tile_rows<false>(t);
}

}  // namespace qvl::ops::kernels
