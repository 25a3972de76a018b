// AVX2 + FMA kernel set of the blocked GEMM (driver and layouts: packed_gemm.h/.cpp): weight
// blocks dequantized to fp32, a 6 x 16 register tile that broadcasts one weight and multiplies
// it with 16 activations held in two vectors: 12 FMAs per 8 loads.
// Called only when the CPU has AVX2/FMA/F16C; no shared inline functions (see packed_kernels.h).
#include <immintrin.h>

#include "ops/packed_gemm.h"

#pragma GCC target("avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

constexpr int kTileRows = 6;  // weight rows per register tile (12 accumulators)

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
      if (p.type == GemmType::kBF16) {
        const uint8_t* src = data + b * kBf16TileBytes + in_group * kCols * 2;
        for (int c = 0; c < kCols; c += 8) {
          const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c * 2));
          const __m256i wide = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
          _mm256_storeu_ps(o + c, _mm256_castsi256_ps(wide));
        }
        continue;
      }
      const uint16_t bits = static_cast<uint16_t>(group[b * kScaleBytes + in_group * 2] |
                                                  (group[b * kScaleBytes + in_group * 2 + 1] << 8));
      const __m256 scale = _mm256_set1_ps(_cvtsh_ss(bits));
      if (p.type == GemmType::kQ8) {
        const uint8_t* src = data + b * kQ8TileBytes + in_group * kCols;
        for (int c = 0; c < kCols; c += 8) {
          const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + c));
          const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
          _mm256_storeu_ps(o + c, _mm256_mul_ps(v, scale));
        }
      } else {  // kQ4: byte j = column j (low nibble) and j + 16 (high nibble), each q + 8
        const uint8_t* src = data + b * kQ4TileBytes + in_group * (kCols / 2);
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
        const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(packed, low4), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), low4), eight);
        const __m128i halves[2] = {lo, hi};
        for (int h = 0; h < 2; ++h) {
          for (int c = 0; c < 16; c += 8) {
            const __m128i q = halves[h];
            const __m128i part = c == 0 ? q : _mm_unpackhi_epi64(q, q);
            const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(part));
            _mm256_storeu_ps(o + h * 16 + c, _mm256_mul_ps(v, scale));
          }
        }
      }
    }
  }
}

// acc[r][0..15] (+)= sum_kk w[r][kk] * x[kk][0..15] for R weight rows; y rows at y + r * ldy.
template <int R>
void tile(const float* w, int64_t ldw, const float* x, int64_t depth, float* y, int64_t ldy,
          bool accumulate) {
  __m256 acc[R][2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    acc[r][0] = accumulate ? _mm256_loadu_ps(y + r * ldy) : _mm256_setzero_ps();
    acc[r][1] = accumulate ? _mm256_loadu_ps(y + r * ldy + 8) : _mm256_setzero_ps();
  }
  for (int64_t kk = 0; kk < depth; ++kk) {
    const __m256 x0 = _mm256_load_ps(x + kk * kGemmPanel);
    const __m256 x1 = _mm256_load_ps(x + kk * kGemmPanel + 8);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 b = _mm256_broadcast_ss(w + r * ldw + kk);
      acc[r][0] = _mm256_fmadd_ps(b, x0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(b, x1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(y + r * ldy, acc[r][0]);
    _mm256_storeu_ps(y + r * ldy + 8, acc[r][1]);
  }
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, bool);
constexpr TileFn kTiles[kTileRows + 1] = {nullptr, tile<1>, tile<2>, tile<3>,
                                          tile<4>, tile<5>, tile<6>};

void run_tile(const void* w, int64_t depth, const void* x, int64_t /*x_panel_stride*/,
              int /*panels: always 1*/, int rows, float* y, int64_t ldy, bool accumulate) {
  kTiles[rows](static_cast<const float*>(w), depth, static_cast<const float*>(x), depth, y, ldy,
               accumulate);
}

}  // namespace

constinit const GemmKernels kGemmF32Avx2{
    "f32-avx2", 4, 4, kTileRows, 1, pack_x_panel_f32, dequantize_rows, run_tile};

}  // namespace qvl::ops::kernels
