// AVX-512 BF16 kernel set of the blocked GEMM for bf16 weights (driver and layouts:
// packed_gemm.h/.cpp). vdpbf16ps does 16 lanes x 2 products per instruction, so one instruction
// covers what two fp32 FMAs cover, on half the bytes.
//
// Layouts, with the instruction's semantics (lane j of dst += a.bf16[2j] * b.bf16[2j] +
// a.bf16[2j + 1] * b.bf16[2j + 1], products exact, sums in fp32 with round-to-nearest-even,
// denormal inputs read as zero):
//   x panel  [k / 2][16][2] bf16: pair q of row j = (x[j][2q], x[j][2q + 1]) at 32-bit word
//            q * 16 + j, so one zmm load holds pair q of all 16 rows (lane j = row j).
//   weights  [rows][depth] bf16, copied from the packed tiles once per block (row r's 32 columns
//            of a tile are contiguous, so pairs of k are already adjacent): a 32-bit broadcast
//            of w[r][2q], w[r][2q + 1] puts the same pair in every lane.
// So acc lane j += w[r][2q] x[j][2q] + w[r][2q+1] x[j][2q+1]: row j of x against weight row r,
// as in the fp32 tile. Tile: 12 weight rows x 2 panels (24 accumulators + 2 x + 1 broadcast).
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

// Rows [0, rows) of x into the panel [k / 2][16] of bf16 pairs (32-bit words); rows past `rows`
// are zero. k is a multiple of 32.
void pack_x_panel(const float* x, int64_t rows, int64_t k, void* panel) {
  auto* dst = static_cast<uint32_t*>(panel);
  for (int64_t j = 0; j < kGemmPanel; ++j) {
    if (j >= rows) {
      for (int64_t q = 0; q < k / 2; ++q) dst[q * kGemmPanel + j] = 0;
      continue;
    }
    const float* src = x + j * k;
    for (int64_t c = 0; c < k; c += 32) {
      // vcvtne2ps2bf16(a, b): bf16 lanes 0..15 from b, 16..31 from a. So lanes follow the
      // columns c .. c + 31 and 32-bit word q holds columns c + 2q (low half), c + 2q + 1.
      const __m512bh bf =
          _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + c + 16), _mm512_loadu_ps(src + c));
      alignas(64) uint32_t pairs[16];
      _mm512_store_si512(pairs, (__m512i)bf);
      for (int64_t q = 0; q < 16; ++q) dst[(c / 2 + q) * kGemmPanel + j] = pairs[q];
    }
  }
}

// Weight rows [r0, r0 + rows) x columns [k0, k0 + depth) of bf16 tiles to out[rows][depth] bf16.
void pack_weights(const GemmProblem& p, int64_t r0, int64_t rows, int64_t k0, int64_t depth,
                  void* out_block) {
  auto* out = static_cast<uint16_t*>(out_block);
  const int64_t b0 = k0 / kCols, nblocks = depth / kCols;
  for (int64_t rr = 0; rr < rows; ++rr) {
    const int64_t r = r0 + rr;
    const uint8_t* data = p.weights + (r / kRows) * p.group_bytes + p.scale_bytes;
    const int64_t in_group = r % kRows;
    uint16_t* o = out + rr * depth;
    for (int64_t b = b0; b < b0 + nblocks; ++b, o += kCols) {  // 32 bf16 = 64 bytes per row
      _mm512_storeu_si512(o, _mm512_loadu_si512(data + b * kBf16TileBytes + in_group * kCols * 2));
    }
  }
}

// acc[r][q] (+)= sum over pairs of w[r] . panel q, for R weight rows and P panels.
template <int R, int P>
void tile(const uint16_t* w, int64_t depth, const uint16_t* x, int64_t x_panel_stride, float* y,
          int64_t ldy, bool accumulate) {
  __m512 acc[R][P];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) {
      acc[r][q] = accumulate ? _mm512_loadu_ps(y + r * ldy + q * 16) : _mm512_setzero_ps();
    }
  }
  for (int64_t pair = 0; pair < depth / 2; ++pair) {
    __m512bh xv[P];
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) {
      xv[q] = (__m512bh)_mm512_load_si512(x + q * x_panel_stride + pair * 2 * kGemmPanel);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int32_t wpair;  // w[r][2 pair] in the low half, w[r][2 pair + 1] in the high half
      __builtin_memcpy(&wpair, w + r * depth + 2 * pair, sizeof wpair);
      const __m512bh b = (__m512bh)_mm512_set1_epi32(wpair);
#pragma GCC unroll 2
      for (int q = 0; q < P; ++q) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], b, xv[q]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) _mm512_storeu_ps(y + r * ldy + q * 16, acc[r][q]);
  }
}

using TileFn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, float*, int64_t, bool);
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
  fn(static_cast<const uint16_t*>(w), depth, static_cast<const uint16_t*>(x), x_panel_stride, y,
     ldy, accumulate);
}

}  // namespace

constinit const GemmKernels kGemmBf16Avx512{
    "bf16-avx512", 2, 2, kTileRows, kTilePanels, pack_x_panel, pack_weights, run_tile};

}  // namespace qvl::ops::kernels
