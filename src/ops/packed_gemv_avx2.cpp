// Whole-row GEMV and small-batch kernels, AVX2 + FMA + F16C (see GroupRun in packed_kernels.h).
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

#pragma GCC target("avx2,fma,f16c")

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

// The 4 fp16 row scales of block b of a group, as fp32.
inline __m128 row_scales(const uint8_t* scales, int64_t b) {
  return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + b * kScaleBytes)));
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

// q8: |x| times the weights with the sign of x (vpmaddubsw; pairs stay within int16 as
// |q| <= 127), pairs to int32, the 4 rows' sums gathered by hadd into [r0 r1 r2 r3 | same].
template <int G, int X>
void q8_rows(const GroupRun& w, const QuantX& x, float* out) {
  const int64_t distance = ahead_bytes<G>(w);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[X][G];
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) acc[i][g] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < w.nb; ++b) {
    for (int g = 0; g < G; ++g) {
      const uint8_t* ahead =
          w.first + g * w.group_bytes + w.scale_bytes + b * kQ8TileBytes + distance;
      prefetch(ahead);
      prefetch(ahead + 64);
    }
    for (int i = 0; i < X; ++i) {
      const int64_t xb = i * x.stride_blocks + b;
      const __m256i xv = load256(x.q + xb * kCols);
      const __m256i ax = _mm256_abs_epi8(xv);
      const __m128 xs = _mm_set1_ps(x.scale[xb]);
      for (int g = 0; g < G; ++g) {
        const uint8_t* group = w.first + g * w.group_bytes;
        const uint8_t* tile = group + w.scale_bytes + b * kQ8TileBytes;
        __m256i dot[kRows];
        for (int r = 0; r < kRows; ++r) {
          const __m256i signed_w = _mm256_sign_epi8(load256(tile + r * kCols), xv);
          dot[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, signed_w), ones);
        }
        const __m256i sums =
            _mm256_hadd_epi32(_mm256_hadd_epi32(dot[0], dot[1]), _mm256_hadd_epi32(dot[2], dot[3]));
        const __m128 s = _mm_mul_ps(row_scales(group, b), xs);
        acc[i][g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_set_m128(s, s), acc[i][g]);
      }
    }
  }
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) {
      _mm_storeu_ps(out + (i * G + g) * kRows, _mm_add_ps(_mm256_castps256_ps128(acc[i][g]),
                                                          _mm256_extractf128_ps(acc[i][g], 1)));
    }
  }
}

// q4: nibbles (q + 8) times x by vpmaddubsw, low nibbles with x[0..16) and high ones with
// x[16..32); the 4 rows' int16 pair sums gathered by hadd (no overflow: |.| <= 4 * 15 * 127 * 2)
// and widened as [r0 r0 r2 r2 | r1 r1 r3 r3]; 8 * sum(x) comes off one lane per row, exactly.
template <int G, int X>
void q4_rows(const GroupRun& w, const QuantX& x, float* out) {
  const int64_t distance = ahead_bytes<G>(w);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i one_lane_per_row = _mm256_setr_epi32(-1, 0, -1, 0, -1, 0, -1, 0);
  const __m256i row_of_lane = _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3);
  __m256 acc[X][G];
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) acc[i][g] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < w.nb; ++b) {
    for (int g = 0; g < G; ++g) {
      prefetch(w.first + g * w.group_bytes + w.scale_bytes + b * kQ4TileBytes + distance);
    }
    for (int i = 0; i < X; ++i) {
      const int64_t xb = i * x.stride_blocks + b;
      const auto* xq = reinterpret_cast<const __m128i*>(x.q + xb * kCols);
      const __m256i xlo = _mm256_broadcastsi128_si256(_mm_loadu_si128(xq));
      const __m256i xhi = _mm256_broadcastsi128_si256(_mm_loadu_si128(xq + 1));
      const __m256i offset = _mm256_and_si256(_mm256_set1_epi32(8 * x.sum[xb]), one_lane_per_row);
      const __m128 xs = _mm_set1_ps(x.scale[xb]);
      for (int g = 0; g < G; ++g) {
        const uint8_t* group = w.first + g * w.group_bytes;
        const uint8_t* tile = group + w.scale_bytes + b * kQ4TileBytes;
        __m256i pairs[2];
        for (int h = 0; h < 2; ++h) {  // rows 0-1, then rows 2-3 (16 bytes per row)
          const __m256i v = load256(tile + h * 32);
          const __m256i lo = _mm256_and_si256(v, low4);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
          pairs[h] = _mm256_add_epi16(_mm256_maddubs_epi16(lo, xlo), _mm256_maddubs_epi16(hi, xhi));
        }
        const __m256i dot = _mm256_sub_epi32(
            _mm256_madd_epi16(_mm256_hadd_epi16(pairs[0], pairs[1]), ones), offset);
        const __m256 s = _mm256_permutevar8x32_ps(
            _mm256_castps128_ps256(_mm_mul_ps(row_scales(group, b), xs)), row_of_lane);
        acc[i][g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), s, acc[i][g]);
      }
    }
  }
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) {
      // [r0 r0 r2 r2] + [r1 r1 r3 r3] pairwise -> [r0 r2 r1 r3] -> [r0 r1 r2 r3]
      const __m128 h =
          _mm_hadd_ps(_mm256_castps256_ps128(acc[i][g]), _mm256_extractf128_ps(acc[i][g], 1));
      _mm_storeu_ps(out + (i * G + g) * kRows, _mm_shuffle_ps(h, h, _MM_SHUFFLE(3, 1, 2, 0)));
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

// Small batches: 2 groups x 4 rows of x per call (8 accumulators), so each x block's loads and
// scale work serve 2 groups and each tile's unpacking 4 rows.
void q8_run_avx2(const GroupRun& w, const QuantX& x, int nx, float* out) {
  for_run_shapes<4, 4, 2>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    q8_rows<G, X>(part, quant_rows_from(x, i0), o);
  });
}

void q4_run_avx2(const GroupRun& w, const QuantX& x, int nx, float* out) {
  for_run_shapes<4, 4, 2>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    q4_rows<G, X>(part, quant_rows_from(x, i0), o);
  });
}

}  // namespace qvl::ops::kernels
