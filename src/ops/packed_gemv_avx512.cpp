// Whole-row GEMV and small-batch kernels, AVX-512 (F, BW, VL, BF16, VNNI); see GroupRun in
// packed_kernels.h. Called only when the CPU has them (see best_isa); this file must not define or
// instantiate any inline function from a shared header.
//
// As on AVX2: templates over G groups x X rows of x whose inner step for one (x row, group) pair is
// the same for every G and X (batch invariance); the GEMV shares each x block across G groups.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors (__Y = __Y), which -Werror rejects
// once inlined here: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/packed_gemv_shapes.h"
#include "ops/packed_kernels.h"

#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

// Weight prefetch distance: the same block of the groups the next call will read (see
// packed_gemv_avx2.cpp for the measurements).
template <int G>
int64_t ahead_bytes(const GroupRun& w) {
  return G * w.group_bytes;
}

inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
}

inline __m512i load512(const void* p) {
  return _mm512_loadu_si512(p);
}

inline __m128 row_scales(const uint8_t* scales, int64_t b) {
  return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + b * kScaleBytes)));
}

// Sums of consecutive runs of `width` lanes of v into out[0 .. 16 / width). (GCC 12's reduce
// intrinsics trip -Wuninitialized, and this runs once per group and row of x.)
inline void sum_lanes(__m512 v, int width, float* out) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  for (int i = 0; i < 16 / width; ++i) {
    float s = 0;
    for (int j = 0; j < width; ++j) s += lanes[i * width + j];
    out[i] = s;
  }
}

// bf16 x (vdpbf16ps): one accumulator per (x row, group, weight row).
template <int G, int X>
void bf16_rows(const GroupRun& w, const uint8_t* x, size_t x_stride, float* out) {
  const int64_t distance = ahead_bytes<G>(w);
  __m512 acc[X][G][kRows];
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) {
      for (int r = 0; r < kRows; ++r) acc[i][g][r] = _mm512_setzero_ps();
    }
  }
  for (int64_t b = 0; b < w.nb; ++b) {
    __m512bh xv[X];
    for (int i = 0; i < X; ++i) {
      xv[i] = (__m512bh)load512(reinterpret_cast<const uint16_t*>(x + i * x_stride) + b * kCols);
    }
    for (int g = 0; g < G; ++g) {
      const uint8_t* tile = w.first + g * w.group_bytes + b * kBf16TileBytes;
      for (int64_t line = 0; line < kBf16TileBytes; line += 64) prefetch(tile + distance + line);
      for (int r = 0; r < kRows; ++r) {
        const __m512bh wv = (__m512bh)load512(tile + r * 64);
        for (int i = 0; i < X; ++i) acc[i][g][r] = _mm512_dpbf16_ps(acc[i][g][r], wv, xv[i]);
      }
    }
  }
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) {
      for (int r = 0; r < kRows; ++r) sum_lanes(acc[i][g][r], 16, out + (i * G + g) * kRows + r);
    }
  }
}

// q8: vpdpbusd wants unsigned weights: (q + 128) * x, then 128 * sum(x) off one lane per row.
template <int G, int X>
void q8_rows(const GroupRun& w, const QuantX& x, float* out) {
  const int64_t distance = ahead_bytes<G>(w);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i rows01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m512i rows23 = _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  __m512 acc[X][G][2];  // 8 lanes per weight row
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) acc[i][g][0] = acc[i][g][1] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < w.nb; ++b) {
    __m512i xv[X], offset[X];
    __m128 xs[X];
    for (int i = 0; i < X; ++i) {
      const int64_t xb = i * x.stride_blocks + b;
      xv[i] = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + xb * kCols)));
      offset[i] = _mm512_set1_epi32(128 * x.sum[xb]);
      xs[i] = _mm_set1_ps(x.scale[xb]);
    }
    for (int g = 0; g < G; ++g) {
      const uint8_t* group = w.first + g * w.group_bytes;
      const uint8_t* tile = group + w.scale_bytes + b * kQ8TileBytes;
      prefetch(tile + distance);
      prefetch(tile + distance + 64);
      const __m512i wu[2] = {_mm512_xor_si512(load512(tile), flip),
                             _mm512_xor_si512(load512(tile + 64), flip)};
      const __m128 scales = row_scales(group, b);
      for (int i = 0; i < X; ++i) {
        const __m512 s = _mm512_castps128_ps512(_mm_mul_ps(scales, xs[i]));
        for (int h = 0; h < 2; ++h) {
          __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wu[h], xv[i]);
          d = _mm512_mask_sub_epi32(d, 0x0101, d, offset[i]);
          acc[i][g][h] =
              _mm512_fmadd_ps(_mm512_cvtepi32_ps(d),
                              _mm512_permutexvar_ps(h == 0 ? rows01 : rows23, s), acc[i][g][h]);
        }
      }
    }
  }
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) {
      sum_lanes(acc[i][g][0], 8, out + (i * G + g) * kRows);
      sum_lanes(acc[i][g][1], 8, out + (i * G + g) * kRows + 2);
    }
  }
}

// q4: one 64-byte load holds the block's 4 rows (16 bytes each); nibbles are q + 8, so
// 8 * sum(x) comes off one lane per row.
template <int G, int X>
void q4_rows(const GroupRun& w, const QuantX& x, float* out) {
  const int64_t distance = ahead_bytes<G>(w);
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i rows = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  __m512 acc[X][G];  // 4 lanes per weight row
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) acc[i][g] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < w.nb; ++b) {
    __m512i xlo[X], xhi[X], offset[X];
    __m128 xs[X];
    for (int i = 0; i < X; ++i) {
      const int64_t xb = i * x.stride_blocks + b;
      const auto* xq = reinterpret_cast<const __m128i*>(x.q + xb * kCols);
      xlo[i] = _mm512_broadcast_i32x4(_mm_loadu_si128(xq));
      xhi[i] = _mm512_broadcast_i32x4(_mm_loadu_si128(xq + 1));
      offset[i] = _mm512_set1_epi32(8 * x.sum[xb]);
      xs[i] = _mm_set1_ps(x.scale[xb]);
    }
    for (int g = 0; g < G; ++g) {
      const uint8_t* group = w.first + g * w.group_bytes;
      const uint8_t* tile = group + w.scale_bytes + b * kQ4TileBytes;
      prefetch(tile + distance);
      const __m512i v = load512(tile);
      const __m512i lo = _mm512_and_si512(v, low4);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      const __m128 scales = row_scales(group, b);
      for (int i = 0; i < X; ++i) {
        __m512i d = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xlo[i]), hi,
                                        xhi[i]);
        d = _mm512_mask_sub_epi32(d, 0x1111, d, offset[i]);
        const __m512 s = _mm512_castps128_ps512(_mm_mul_ps(scales, xs[i]));
        acc[i][g] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(rows, s), acc[i][g]);
      }
    }
  }
  for (int i = 0; i < X; ++i) {
    for (int g = 0; g < G; ++g) sum_lanes(acc[i][g], 4, out + (i * G + g) * kRows);
  }
}

}  // namespace

void bf16_run_avx512(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out) {
  const auto* xb = static_cast<const uint8_t*>(x);
  // Small batches one group at a time: 4 x rows x 4 weight rows of accumulators already.
  for_run_shapes<4, 4, 1>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    bf16_rows<G, X>(part, xb + i0 * x_stride, x_stride, o);
  });
}

void q8_run_avx512(const GroupRun& w, const QuantX& x, int nx, float* out) {
  for_run_shapes<4, 4, 2>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    q8_rows<G, X>(part, quant_rows_from(x, i0), o);
  });
}

void q4_run_avx512(const GroupRun& w, const QuantX& x, int nx, float* out) {
  for_run_shapes<4, 4, 2>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    q4_rows<G, X>(part, quant_rows_from(x, i0), o);
  });
}

}  // namespace qvl::ops::kernels
