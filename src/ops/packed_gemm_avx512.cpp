// AVX-512 fp32 kernel set of the blocked GEMM (driver and layouts: packed_gemm.h/.cpp): weight
// blocks dequantized to fp32 as on AVX2, and a 12 x 32 register tile: 12 weight rows against two
// 16-row x panels, one zmm each, so 24 FMAs per 14 loads (24 accumulators + 2 x + 1 broadcast of
// the 32 zmm registers). Tails use smaller instantiations (rows 1..12, panels 1..2).
// Called only when the CPU has the AVX-512 level (see best_isa); no shared inline functions.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors (__Y = __Y), which -Werror rejects
// once inlined here: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/packed_gemm.h"

#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

constexpr int kTileRows = 12;
constexpr int kTilePanels = 2;

// The fp16 scale of weight row in_group of block b of a q8/q4 group.
float block_scale(const uint8_t* group, int64_t b, int64_t in_group) {
  const uint8_t* s = group + b * kScaleBytes + in_group * 2;
  return _cvtsh_ss(static_cast<uint16_t>(s[0] | (s[1] << 8)));
}

// 16 int8 values times scale, to fp32 at out.
void store_scaled(__m128i q, __m512 scale, float* out) {
  _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), scale));
}

// Weight rows [r0, r0 + rows) of the span [k0, k0 + depth) to fp32 in out[rows][depth].
void dequantize_rows(const GemmProblem& p, int64_t r0, int64_t rows, int64_t k0, int64_t depth,
                     void* out_block) {
  auto* out = static_cast<float*>(out_block);
  const int64_t b0 = k0 / kCols, nblocks = depth / kCols;
  for (int64_t rr = 0; rr < rows; ++rr) {
    const int64_t r = r0 + rr;
    float* o = out + rr * depth;
    const uint8_t* group = p.weights + (r / kRows) * p.group_bytes;
    const int64_t in_group = r % kRows;
    const uint8_t* data = group + p.scale_bytes;
    for (int64_t b = b0; b < b0 + nblocks; ++b, o += kCols) {
      if (p.type == GemmType::kBF16) {  // bf16 is the top half of fp32: widen and shift
        const uint8_t* src = data + b * kBf16TileBytes + in_group * kCols * 2;
        for (int c = 0; c < kCols; c += 16) {
          const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + c * 2));
          const __m512i wide = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
          _mm512_storeu_ps(o + c, _mm512_castsi512_ps(wide));
        }
        continue;
      }
      const __m512 scale = _mm512_set1_ps(block_scale(group, b, in_group));
      if (p.type == GemmType::kQ8) {
        const uint8_t* src = data + b * kQ8TileBytes + in_group * kCols;
        store_scaled(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)), scale, o);
        store_scaled(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16)), scale, o + 16);
      } else {  // kQ4: byte j = column j (low nibble) and j + 16 (high nibble), each q + 8
        const uint8_t* src = data + b * kQ4TileBytes + in_group * (kCols / 2);
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
        const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(packed, low4), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), low4), eight);
        store_scaled(lo, scale, o);
        store_scaled(hi, scale, o + 16);
      }
    }
  }
}

// acc[r][q] (+)= sum_kk w[r][kk] * panel q [kk][0..15] for R weight rows and P panels.
template <int R, int P>
void tile(const float* w, int64_t depth, const float* x, int64_t x_panel_stride, float* y,
          int64_t ldy, bool accumulate) {
  __m512 acc[R][P];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) {
      acc[r][q] = accumulate ? _mm512_loadu_ps(y + r * ldy + q * 16) : _mm512_setzero_ps();
    }
  }
  for (int64_t kk = 0; kk < depth; ++kk) {
    __m512 xv[P];
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) xv[q] = _mm512_load_ps(x + q * x_panel_stride + kk * kGemmPanel);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 b = _mm512_set1_ps(w[r * depth + kk]);
#pragma GCC unroll 2
      for (int q = 0; q < P; ++q) acc[r][q] = _mm512_fmadd_ps(b, xv[q], acc[r][q]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) _mm512_storeu_ps(y + r * ldy + q * 16, acc[r][q]);
  }
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, bool);

// Plain arrays, not std::array: no template from a shared header may be instantiated here.
template <int P>
struct Tiles {
  static constexpr TileFn fns[kTileRows + 1] = {
      nullptr,    tile<1, P>, tile<2, P>, tile<3, P>,  tile<4, P>,  tile<5, P>, tile<6, P>,
      tile<7, P>, tile<8, P>, tile<9, P>, tile<10, P>, tile<11, P>, tile<12, P>};
};

void run_tile(const void* w, int64_t depth, const void* x, int64_t x_panel_stride, int panels,
              int rows, float* y, int64_t ldy, bool accumulate) {
  const TileFn fn = panels == kTilePanels ? Tiles<2>::fns[rows] : Tiles<1>::fns[rows];
  fn(static_cast<const float*>(w), depth, static_cast<const float*>(x), x_panel_stride, y, ldy,
     accumulate);
}

}  // namespace

constinit const GemmKernels kGemmF32Avx512{
    "f32-avx512", 4, 4, kTileRows, kTilePanels, pack_x_panel_f32, dequantize_rows, run_tile};

}  // namespace qvl::ops::kernels
