// Whole-row GEMV and small-batch kernels, AVX-512 (F, BW, VL, BF16, VNNI); see GroupRun in
// packed_kernels.h. Called only when the CPU has them (see best_isa); this file must not define or
// instantiate any inline function from a shared header.
//
// Templates over G groups x X rows of x whose arithmetic for one (x row, group) pair is the same
// for every G and X (batch invariance); the GEMV shares each x block across G groups. q8/q4 live
// in packed_gemv_avx512_quant.inc (also run on a scalar model of AVX-512 in the tests); they
// reproduce the int8 GEMM's rows bit for bit.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors (__Y = __Y), which -Werror rejects
// once inlined here: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

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

// The sum of v's lanes. (GCC 12's reduce intrinsics trip -Wuninitialized, and this runs once per
// group and row of x.)
inline float sum_lanes(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float s = 0;
  for (float lane : lanes) s += lane;
  return s;
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
      for (int r = 0; r < kRows; ++r) out[(i * G + g) * kRows + r] = sum_lanes(acc[i][g][r]);
    }
  }
}

#include "ops/packed_gemv_avx512_quant.inc"

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
    quant_rows<Q8Format, G, X>(part, quant_rows_from(x, i0), o);
  });
}

void q4_run_avx512(const GroupRun& w, const QuantX& x, int nx, float* out) {
  for_run_shapes<4, 4, 2>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    quant_rows<Q4Format, G, X>(part, quant_rows_from(x, i0), o);
  });
}

}  // namespace qvl::ops::kernels
