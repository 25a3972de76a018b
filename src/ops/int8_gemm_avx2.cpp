// AVX2 micro-kernels of the int8 GEMM (see int8_gemm_kernels.h): x rows [1, 4] x 16 weight rows
// (two vectors of 8 rows, 4 columns per 32-bit lane), x broadcast 4 bytes at a time.
//
// vpmaddubsw multiplies unsigned by signed bytes and adds pairs into int16 with saturation, so
// each type uses an operand split that cannot saturate (results are exact):
//   q8: |x| (<= 127, vpabsb once per broadcast) times w with the sign of x (|w| <= 127): a pair
//       is at most 2 * 127 * 127 = 32258 < 32767; vpmaddwd then widens to int32 every step. (The
//       alternative, x + 128 as the unsigned operand, reaches 2 * 255 * 127 and saturates; 7-bit
//       x would double the activation rounding error. The vpsignb costs one more uop per product
//       vector: 12% of the vpmaddubsw + vpmaddwd + vpaddd throughput on Zen 3 by our probe.)
//   q4: the stored nibble q + 8 (<= 15) times x (|x| <= 127): a pair is at most 3810, so the 8
//       steps of a block (30480) are summed in int16 and widened once per block; the offset is
//       taken off as 8 * sum(x) of the block.
// Per block of 32 columns the int32 dot products are scaled by (weight scale * x scale) and added
// to the fp32 outputs in c (there are not enough registers to keep them, so c stays in L1).
// Called only when the CPU has AVX2/FMA; no shared inline functions (see packed_kernels.h).
#include <immintrin.h>

#include <cstring>

#include "ops/int8_gemm_kernels.h"

#pragma GCC target("avx2,fma,f16c")

#include "ops/int8_gemm_vnni256_tile.h"

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

// c[i][0..16) += dot[i][v] * weight scales * x scale of row i, for block b.
template <int R>
inline void scale_into_c(const float* xscale, int64_t ldxs, float* __restrict c, int64_t ldc,
                         const uint8_t* block, const __m256i (&dot)[R][2]) {
  const auto* scales = reinterpret_cast<const float*>(block + 32 * kNr);
  const __m256 s0 = _mm256_loadu_ps(scales), s1 = _mm256_loadu_ps(scales + 8);
  for (int i = 0; i < R; ++i) {
    const __m256 sx = _mm256_set1_ps(xscale[i * ldxs]);
    float* ci = c + i * ldc;
    _mm256_storeu_ps(ci, _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][0]), _mm256_mul_ps(s0, sx),
                                         _mm256_loadu_ps(ci)));
    _mm256_storeu_ps(ci + 8, _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][1]), _mm256_mul_ps(s1, sx),
                                             _mm256_loadu_ps(ci + 8)));
  }
}

template <int R>
void tile_q8(const Int8Tile& t) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t* const xq = t.xq;
  const int64_t ldx = t.ldx;
  for (int64_t b = 0; b < t.nblocks; ++b) {
    const uint8_t* block = t.strip + b * kBlockBytes;
    const int8_t* xb = xq + b * 32;
    __m256i acc[R][2];
    for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
#pragma GCC unroll 2  // measured: fuller unrolling makes GCC spill accumulators
    for (int quad = 0; quad < 8; ++quad) {
      const __m256i w0 = load(block + quad * 64), w1 = load(block + quad * 64 + 32);
#pragma GCC unroll 6
      for (int i = 0; i < R; ++i) {
        const __m256i xs = broadcast4(xb + i * ldx + quad * 4);
        const __m256i xa = _mm256_abs_epi8(xs);
        acc[i][0] = _mm256_add_epi32(
            acc[i][0], _mm256_madd_epi16(_mm256_maddubs_epi16(xa, _mm256_sign_epi8(w0, xs)), ones));
        acc[i][1] = _mm256_add_epi32(
            acc[i][1], _mm256_madd_epi16(_mm256_maddubs_epi16(xa, _mm256_sign_epi8(w1, xs)), ones));
      }
    }
    scale_into_c<R>(t.xscale + b, t.ldxs, t.c, t.ldc, block, acc);
  }
}

template <int R>
void tile_q4(const Int8Tile& t) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t* const xq = t.xq;
  const int64_t ldx = t.ldx;
  for (int64_t b = 0; b < t.nblocks; ++b) {
    const uint8_t* block = t.strip + b * kBlockBytes;
    const int8_t* xb = xq + b * 32;
    __m256i acc[R][2];
    for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int quad = 0; quad < 8; ++quad) {
      const __m256i w0 = load(block + quad * 64), w1 = load(block + quad * 64 + 32);
#pragma GCC unroll 6
      for (int i = 0; i < R; ++i) {
        const __m256i xs = broadcast4(xb + i * ldx + quad * 4);
        acc[i][0] = _mm256_add_epi16(acc[i][0], _mm256_maddubs_epi16(w0, xs));
        acc[i][1] = _mm256_add_epi16(acc[i][1], _mm256_maddubs_epi16(w1, xs));
      }
    }
    for (int i = 0; i < R; ++i) {
      const __m256i offset = _mm256_set1_epi32(8 * t.xsum[i * t.ldxs + b]);
      acc[i][0] = _mm256_sub_epi32(_mm256_madd_epi16(acc[i][0], ones), offset);
      acc[i][1] = _mm256_sub_epi32(_mm256_madd_epi16(acc[i][1], ones), offset);
    }
    scale_into_c<R>(t.xscale + b, t.ldxs, t.c, t.ldc, block, acc);
  }
}

// vpdpbusd in AVX2, exactly: bytes widened to 16 bit (a unsigned, b signed), even and odd pairs
// through vpmaddwd (|products| <= 255 * 128, no saturation).
struct EmulatedVpdpbusd {
  static __m256i apply(__m256i acc, __m256i a, __m256i b) {
    const __m256i low8 = _mm256_set1_epi16(0x00ff);
    const __m256i a_even = _mm256_and_si256(a, low8), a_odd = _mm256_srli_epi16(a, 8);
    const __m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8);
    const __m256i b_odd = _mm256_srai_epi16(b, 8);
    return _mm256_add_epi32(
        acc, _mm256_add_epi32(_mm256_madd_epi16(a_even, b_even), _mm256_madd_epi16(a_odd, b_odd)));
  }
};

}  // namespace

void int8_tile_q8_avxvnni_emulated(const Int8Tile& t) {
  vnni256_tile_rows<EmulatedVpdpbusd, true>(t);
}
void int8_tile_q4_avxvnni_emulated(const Int8Tile& t) {
  vnni256_tile_rows<EmulatedVpdpbusd, false>(t);
}

void int8_tile_q8_avx2(const Int8Tile& t) {
  switch (t.rows) {
    case 1:
      return tile_q8<1>(t);
    case 2:
      return tile_q8<2>(t);
    case 3:
      return tile_q8<3>(t);
    default:
      return tile_q8<4>(t);
  }
}

void int8_tile_q4_avx2(const Int8Tile& t) {
  switch (t.rows) {
    case 1:
      return tile_q4<1>(t);
    case 2:
      return tile_q4<2>(t);
    case 3:
      return tile_q4<3>(t);
    default:
      return tile_q4<4>(t);
  }
}

}  // namespace qvl::ops::kernels
