// The session-6 AVX2 q8/q4 run kernels (2 fp32 lanes per weight row, half-block sums converted
// one by one), kept only as the benchmarks' baseline (BM_SmallBatchKernel/baseline,
// BM_GemvKernel/baseline) and held to the scalar oracle by the tests; matmul never calls them.
// Their results differ from the current kernels' (packed_gemv_avx2_quant.cpp) in the last bits.
// Called only when the CPU has AVX2/FMA/F16C; no shared inline functions (see packed_kernels.h).
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

void q8_run_avx2_session6(const GroupRun& w, const QuantX& x, int nx, float* out) {
  for_run_shapes<4, 4, 2>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    q8_rows<G, X>(part, quant_rows_from(x, i0), o);
  });
}

void q4_run_avx2_session6(const GroupRun& w, const QuantX& x, int nx, float* out) {
  for_run_shapes<4, 4, 2>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    q4_rows<G, X>(part, quant_rows_from(x, i0), o);
  });
}

}  // namespace qvl::ops::kernels
