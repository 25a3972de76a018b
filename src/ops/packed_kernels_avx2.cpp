// AVX2 + FMA + F16C kernels. Called only when the CPU has them (see best_isa); this file must not
// define or instantiate any inline function from a shared header (see packed_kernels.h).
#include <immintrin.h>

#include "ops/packed_kernels.h"

#pragma GCC target("avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

inline float sum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

inline float sum4(__m128 v) {
  const __m128 t = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

// The 4 row scales of block b times the activation block scale.
inline __m128 block_scales(const uint8_t* scales, int64_t b, float xscale) {
  const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + b * kScaleBytes));
  return _mm_mul_ps(_mm_cvtph_ps(h), _mm_set1_ps(xscale));
}

inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
}

}  // namespace

void quantize_row_avx2(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * kCols;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(xb + 8 * j);
      amax = _mm256_max_ps(_mm256_and_ps(v[j], abs_mask), amax);  // NaN lanes keep amax
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    const float m = _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
    const __m256 inv = _mm256_set1_ps(m > 0 ? 127.0f / m : 0.0f);
    __m256i iv[4];
    __m256i total = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      iv[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], inv));  // NaN -> INT_MIN -> -127
      iv[j] = _mm256_min_epi32(_mm256_max_epi32(iv[j], lo), hi);
      total = _mm256_add_epi32(total, iv[j]);
    }
    const __m256i packed =
        _mm256_packs_epi16(_mm256_packs_epi32(iv[0], iv[1]), _mm256_packs_epi32(iv[2], iv[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kCols),
                        _mm256_permutevar8x32_epi32(packed, order));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
    scale[b] = m / 127.0f;
    sum[b] = _mm_cvtsi128_si32(t);
  }
}

void bf16_group_avx2(const GroupSpan& w, const void* x, float* out) {
  const float* xf = static_cast<const float*>(x);
  const __m256i high_half = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  __m256 even[kRows], odd[kRows];
  for (int r = 0; r < kRows; ++r) even[r] = odd[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = w.data + b * kBf16TileBytes;
    for (int64_t line = 0; line < kBf16TileBytes; line += 64)
      prefetch(tile + kPrefetchBytes + line);
    for (int c = 0; c < 2; ++c) {  // two chunks of 16 columns
      const __m256 xe = _mm256_loadu_ps(xf + b * kCols + c * 16);
      const __m256 xo = _mm256_loadu_ps(xf + b * kCols + c * 16 + 8);
      for (int r = 0; r < kRows; ++r) {
        const __m256i v =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + r * 64 + c * 32));
        even[r] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v, 16)), xe, even[r]);
        odd[r] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v, high_half)), xo, odd[r]);
      }
    }
  }
  for (int r = 0; r < kRows; ++r) out[r] = sum8(_mm256_add_ps(even[r], odd[r]));
}

void bf16_group3_avx2(const GroupSpan& w, const void* x, size_t x_stride, float* out) {
  constexpr int kX = 3;
  const auto* x0 = static_cast<const uint8_t*>(x);
  const __m256i high_half = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  __m256 acc[kX][kRows];  // 12 accumulators, 3 x and 1 weight register
  for (int i = 0; i < kX; ++i) {
    for (int r = 0; r < kRows; ++r) acc[i][r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = w.data + b * kBf16TileBytes;
    // Even then odd columns of each 16: x stays in registers (3 loads feed 12 FMAs) and each
    // weight vector is re-read from L1 once for the odd half.
    for (int half = 0; half < 4; ++half) {
      const int c = half / 2;
      const bool odd = half % 2 == 1;
      const int64_t col = b * kCols + c * 16 + (odd ? 8 : 0);
      __m256 xv[kX];
      for (int i = 0; i < kX; ++i) {
        xv[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(x0 + i * x_stride) + col);
      }
      for (int r = 0; r < kRows; ++r) {
        const __m256i v =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + r * 64 + c * 32));
        const __m256 wv =
            _mm256_castsi256_ps(odd ? _mm256_and_si256(v, high_half) : _mm256_slli_epi32(v, 16));
        for (int i = 0; i < kX; ++i) acc[i][r] = _mm256_fmadd_ps(wv, xv[i], acc[i][r]);
      }
    }
  }
  for (int i = 0; i < kX; ++i) {
    for (int r = 0; r < kRows; ++r) out[i * kRows + r] = sum8(acc[i][r]);
  }
}

void q8_group_avx2(const GroupSpan& w, const QuantX& x, float* out) {
  const uint8_t* data = w.data;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();  // [r0 r1 r2 r3 | r0 r1 r2 r3]
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = data + b * kQ8TileBytes;
    prefetch(tile + kPrefetchBytes);
    prefetch(tile + kPrefetchBytes + 64);
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + b * kCols));
    const __m256i ax = _mm256_abs_epi8(xv);
    __m256i dot[kRows];
    for (int r = 0; r < kRows; ++r) {
      // |x| * (w with the sign of x) = x * w; pairs stay within int16 as |q| <= 127.
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + r * kCols));
      dot[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(w, xv)), ones);
    }
    const __m256i sums =
        _mm256_hadd_epi32(_mm256_hadd_epi32(dot[0], dot[1]), _mm256_hadd_epi32(dot[2], dot[3]));
    const __m128 s = block_scales(w.scales, b, x.scale[b]);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_set_m128(s, s), acc);
  }
  const __m128 total = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  _mm_storeu_ps(out, total);
}

void q4_group_avx2(const GroupSpan& w, const QuantX& x, float* out) {
  const uint8_t* data = w.data;
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i first_of_row = _mm256_setr_epi32(-1, 0, 0, 0, -1, 0, 0, 0);
  const __m256i rows01 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  const __m256i rows23 = _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3);
  __m256 acc01 = _mm256_setzero_ps(), acc23 = _mm256_setzero_ps();  // 4 lanes per row
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = data + b * kQ4TileBytes;
    prefetch(tile + kPrefetchBytes);
    const auto* xb = reinterpret_cast<const __m128i*>(x.q + b * kCols);
    const __m256i xlo = _mm256_broadcastsi128_si256(_mm_loadu_si128(xb));
    const __m256i xhi = _mm256_broadcastsi128_si256(_mm_loadu_si128(xb + 1));
    // Nibbles are q + 8: subtract 8 * sum(x) once per row (in one of its 4 lanes).
    const __m256i offset = _mm256_and_si256(_mm256_set1_epi32(8 * x.sum[b]), first_of_row);
    __m256 dot[2];
    for (int h = 0; h < 2; ++h) {  // rows 0-1, then rows 2-3 (16 bytes per row)
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + h * 32));
      const __m256i lo = _mm256_and_si256(v, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      const __m256i pairs =
          _mm256_add_epi16(_mm256_maddubs_epi16(lo, xlo), _mm256_maddubs_epi16(hi, xhi));
      dot[h] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_madd_epi16(pairs, ones), offset));
    }
    const __m256 s = _mm256_castps128_ps256(block_scales(w.scales, b, x.scale[b]));
    acc01 = _mm256_fmadd_ps(dot[0], _mm256_permutevar8x32_ps(s, rows01), acc01);
    acc23 = _mm256_fmadd_ps(dot[1], _mm256_permutevar8x32_ps(s, rows23), acc23);
  }
  out[0] = sum4(_mm256_castps256_ps128(acc01));
  out[1] = sum4(_mm256_extractf128_ps(acc01, 1));
  out[2] = sum4(_mm256_castps256_ps128(acc23));
  out[3] = sum4(_mm256_extractf128_ps(acc23, 1));
}

}  // namespace qvl::ops::kernels

namespace qvl::ops::kernels {

void q8_group2_avx2(const GroupSpan& w, const QuantX& x, float* out) {
  constexpr int kX = 2;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[kX] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = w.data + b * kQ8TileBytes;
    __m256i wv[kRows];  // loaded once, used for both x rows
    for (int r = 0; r < kRows; ++r) {
      wv[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + r * kCols));
    }
    const __m128 row_scales =
        _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w.scales + b * kScaleBytes)));
    for (int i = 0; i < kX; ++i) {  // the same arithmetic as q8_group_avx2, row by row
      const int64_t xb = i * x.stride_blocks + b;
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + xb * kCols));
      const __m256i ax = _mm256_abs_epi8(xv);
      __m256i dot[kRows];
      for (int r = 0; r < kRows; ++r) {
        dot[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(wv[r], xv)), ones);
      }
      const __m256i sums =
          _mm256_hadd_epi32(_mm256_hadd_epi32(dot[0], dot[1]), _mm256_hadd_epi32(dot[2], dot[3]));
      const __m128 s = _mm_mul_ps(row_scales, _mm_set1_ps(x.scale[xb]));
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_set_m128(s, s), acc[i]);
    }
  }
  for (int i = 0; i < kX; ++i) {
    _mm_storeu_ps(out + i * kRows,
                  _mm_add_ps(_mm256_castps256_ps128(acc[i]), _mm256_extractf128_ps(acc[i], 1)));
  }
}

void q4_group2_avx2(const GroupSpan& w, const QuantX& x, float* out) {
  constexpr int kX = 2;
  const uint8_t* data = w.data;
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i first_of_row = _mm256_setr_epi32(-1, 0, 0, 0, -1, 0, 0, 0);
  const __m256i rows01 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  const __m256i rows23 = _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3);
  __m256 acc[kX][2];
  for (int i = 0; i < kX; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = data + b * kQ4TileBytes;
    __m256i lo[2], hi[2];
    for (int h = 0; h < 2; ++h) {  // unpacked once, used for both x rows
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + h * 32));
      lo[h] = _mm256_and_si256(v, low4);
      hi[h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
    }
    const __m128i scale_bits =
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w.scales + b * kScaleBytes));
    for (int i = 0; i < kX; ++i) {  // the same arithmetic as q4_group_avx2, row by row
      const int64_t xb = i * x.stride_blocks + b;
      const auto* xv = reinterpret_cast<const __m128i*>(x.q + xb * kCols);
      const __m256i xlo = _mm256_broadcastsi128_si256(_mm_loadu_si128(xv));
      const __m256i xhi = _mm256_broadcastsi128_si256(_mm_loadu_si128(xv + 1));
      const __m256i offset = _mm256_and_si256(_mm256_set1_epi32(8 * x.sum[xb]), first_of_row);
      __m256 dot[2];
      for (int h = 0; h < 2; ++h) {
        const __m256i pairs =
            _mm256_add_epi16(_mm256_maddubs_epi16(lo[h], xlo), _mm256_maddubs_epi16(hi[h], xhi));
        dot[h] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_madd_epi16(pairs, ones), offset));
      }
      const __m256 s =
          _mm256_castps128_ps256(_mm_mul_ps(_mm_cvtph_ps(scale_bits), _mm_set1_ps(x.scale[xb])));
      acc[i][0] = _mm256_fmadd_ps(dot[0], _mm256_permutevar8x32_ps(s, rows01), acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(dot[1], _mm256_permutevar8x32_ps(s, rows23), acc[i][1]);
    }
  }
  for (int i = 0; i < kX; ++i) {
    out[i * kRows + 0] = sum4(_mm256_castps256_ps128(acc[i][0]));
    out[i * kRows + 1] = sum4(_mm256_extractf128_ps(acc[i][0], 1));
    out[i * kRows + 2] = sum4(_mm256_castps256_ps128(acc[i][1]));
    out[i * kRows + 3] = sum4(_mm256_extractf128_ps(acc[i][1], 1));
  }
}

// The decode GEMV is compute-bound on AVX2 for q4, so this variant takes two groups per x block
// and keeps the per-block x work (broadcasts, scale) shared; the nibble offset is subtracted once
// at the end as 8 * sum_b scale_w * scale_x * sum(x) instead of per block.
void q4_group_pair_avx2(const GroupSpan& w0, const GroupSpan& w1, const QuantX& x, float* out) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i rows01 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  const __m256i rows23 = _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3);
  const uint8_t* data[2] = {w0.data, w1.data};
  const uint8_t* scales[2] = {w0.scales, w1.scales};
  __m256 acc[2][2];
  __m128 offset[2];
  for (int g = 0; g < 2; ++g) {
    acc[g][0] = acc[g][1] = _mm256_setzero_ps();
    offset[g] = _mm_setzero_ps();
  }
  for (int64_t b = 0; b < w0.nb; ++b) {
    const auto* xb = reinterpret_cast<const __m128i*>(x.q + b * kCols);
    const __m256i xlo = _mm256_broadcastsi128_si256(_mm_loadu_si128(xb));
    const __m256i xhi = _mm256_broadcastsi128_si256(_mm_loadu_si128(xb + 1));
    const __m128 xscale = _mm_set1_ps(x.scale[b]);
    const __m128 xsum = _mm_set1_ps(x.scaled_sum[b]);
    for (int g = 0; g < 2; ++g) {
      const uint8_t* tile = data[g] + b * kQ4TileBytes;
      prefetch(tile + kPrefetchBytes);
      const __m128 raw = _mm_cvtph_ps(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales[g] + b * kScaleBytes)));
      offset[g] = _mm_fmadd_ps(raw, xsum, offset[g]);
      const __m256 s = _mm256_castps128_ps256(_mm_mul_ps(raw, xscale));
      for (int h = 0; h < 2; ++h) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + h * 32));
        const __m256i lo = _mm256_and_si256(v, low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        const __m256i pairs =
            _mm256_add_epi16(_mm256_maddubs_epi16(lo, xlo), _mm256_maddubs_epi16(hi, xhi));
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
        acc[g][h] =
            _mm256_fmadd_ps(dot, _mm256_permutevar8x32_ps(s, h == 0 ? rows01 : rows23), acc[g][h]);
      }
    }
  }
  for (int g = 0; g < 2; ++g) {
    alignas(16) float off[4];
    _mm_store_ps(off, offset[g]);
    float* o = out + g * kRows;
    o[0] = sum4(_mm256_castps256_ps128(acc[g][0])) - 8 * off[0];
    o[1] = sum4(_mm256_extractf128_ps(acc[g][0], 1)) - 8 * off[1];
    o[2] = sum4(_mm256_castps256_ps128(acc[g][1])) - 8 * off[2];
    o[3] = sum4(_mm256_extractf128_ps(acc[g][1], 1)) - 8 * off[3];
  }
}

}  // namespace qvl::ops::kernels
