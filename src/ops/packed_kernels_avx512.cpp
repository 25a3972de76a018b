// AVX-512 kernels (F, BW, VL, BF16, VNNI). Called only when the CPU has them (see best_isa); this
// file must not define or instantiate any inline function from a shared header.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors (__Y = __Y), which -Werror rejects
// once inlined here: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/packed_kernels.h"

#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
}

inline __m512i load512(const void* p) {
  return _mm512_loadu_si512(p);
}

// Sums of consecutive runs of `width` lanes of v into out[0 .. 16 / width). (GCC 12's reduce
// intrinsics trip -Wuninitialized, and this runs once per group.)
inline void sum_lanes(__m512 v, int width, float* out) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  for (int i = 0; i < 16 / width; ++i) {
    float s = 0;
    for (int j = 0; j < width; ++j) s += lanes[i * width + j];
    out[i] = s;
  }
}

}  // namespace

void bf16_group_avx512(const GroupSpan& w, const void* x, float* out) {
  const auto* xb = static_cast<const uint16_t*>(x);
  __m512 acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = w.data + b * kBf16TileBytes;
    for (int64_t line = 0; line < kBf16TileBytes; line += 64)
      prefetch(tile + kPrefetchBytes + line);
    const __m512bh xv = (__m512bh)load512(xb + b * kCols);
    for (int r = 0; r < kRows; ++r) {
      acc[r] = _mm512_dpbf16_ps(acc[r], (__m512bh)load512(tile + r * 64), xv);
    }
  }
  for (int r = 0; r < kRows; ++r) sum_lanes(acc[r], 16, out + r);
}

void bf16_group3_avx512(const GroupSpan& w, const void* x, size_t x_stride, float* out) {
  constexpr int kX = 3;
  const auto* x0 = static_cast<const uint8_t*>(x);
  __m512 acc[kX][kRows];
  for (int i = 0; i < kX; ++i) {
    for (int r = 0; r < kRows; ++r) acc[i][r] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = w.data + b * kBf16TileBytes;
    __m512bh xv[kX];
    for (int i = 0; i < kX; ++i) {
      xv[i] = (__m512bh)load512(reinterpret_cast<const uint16_t*>(x0 + i * x_stride) + b * kCols);
    }
    for (int r = 0; r < kRows; ++r) {
      const __m512bh w = (__m512bh)load512(tile + r * 64);
      for (int i = 0; i < kX; ++i) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], w, xv[i]);
    }
  }
  for (int i = 0; i < kX; ++i) {
    for (int r = 0; r < kRows; ++r) sum_lanes(acc[i][r], 16, out + i * kRows + r);
  }
}

namespace {

// kX consecutive x rows (row i at xq + i * nb * 32, xscale + i * nb, xsum + i * nb) against one
// group; the weights are loaded and unpacked once for all of them.
template <int kX>
void q8_rows(const GroupSpan& w, const QuantX& x, float* out) {
  const uint8_t* data = w.data;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i rows01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m512i rows23 = _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  __m512 acc[kX][2];  // 8 lanes per weight row
  for (int i = 0; i < kX; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = data + b * kQ8TileBytes;
    prefetch(tile + kPrefetchBytes);
    prefetch(tile + kPrefetchBytes + 64);
    // vpdpbusd wants unsigned weights: (q + 128) * x, then 128 * sum(x) off one lane per row.
    const __m512i wu[2] = {_mm512_xor_si512(load512(tile), flip),
                           _mm512_xor_si512(load512(tile + 64), flip)};
    const __m128 row_scales =
        _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w.scales + b * kScaleBytes)));
    for (int i = 0; i < kX; ++i) {
      const int64_t xb = i * x.stride_blocks + b;
      const __m512i xv = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + xb * kCols)));
      const __m512i offset = _mm512_set1_epi32(128 * x.sum[xb]);
      const __m512 s = _mm512_castps128_ps512(_mm_mul_ps(row_scales, _mm_set1_ps(x.scale[xb])));
      for (int h = 0; h < 2; ++h) {
        __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wu[h], xv);
        d = _mm512_mask_sub_epi32(d, 0x0101, d, offset);
        acc[i][h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d),
                                    _mm512_permutexvar_ps(h == 0 ? rows01 : rows23, s), acc[i][h]);
      }
    }
  }
  for (int i = 0; i < kX; ++i) {
    sum_lanes(acc[i][0], 8, out + i * kRows);
    sum_lanes(acc[i][1], 8, out + i * kRows + 2);
  }
}

template <int kX>
void q4_rows(const GroupSpan& w, const QuantX& x, float* out) {
  const uint8_t* data = w.data;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i rows = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  __m512 acc[kX];  // 4 lanes per weight row
  for (int i = 0; i < kX; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = data + b * kQ4TileBytes;
    prefetch(tile + kPrefetchBytes);
    const __m512i v = load512(tile);  // 16 bytes per row
    const __m512i lo = _mm512_and_si512(v, low4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    const __m128 row_scales =
        _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w.scales + b * kScaleBytes)));
    for (int i = 0; i < kX; ++i) {
      const int64_t xb = i * x.stride_blocks + b;
      const auto* xv = reinterpret_cast<const __m128i*>(x.q + xb * kCols);
      const __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128(xv));
      const __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128(xv + 1));
      __m512i d =
          _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xlo), hi, xhi);
      // Nibbles are q + 8: subtract 8 * sum(x) once per row.
      d = _mm512_mask_sub_epi32(d, 0x1111, d, _mm512_set1_epi32(8 * x.sum[xb]));
      const __m512 s = _mm512_castps128_ps512(_mm_mul_ps(row_scales, _mm_set1_ps(x.scale[xb])));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(rows, s), acc[i]);
    }
  }
  for (int i = 0; i < kX; ++i) sum_lanes(acc[i], 4, out + i * kRows);
}

}  // namespace

void q8_group_avx512(const GroupSpan& w, const QuantX& x, float* out) {
  q8_rows<1>(w, x, out);
}
void q8_group2_avx512(const GroupSpan& w, const QuantX& x, float* out) {
  q8_rows<2>(w, x, out);
}
void q4_group_avx512(const GroupSpan& w, const QuantX& x, float* out) {
  q4_rows<1>(w, x, out);
}
void q4_group2_avx512(const GroupSpan& w, const QuantX& x, float* out) {
  q4_rows<2>(w, x, out);
}

}  // namespace qvl::ops::kernels
