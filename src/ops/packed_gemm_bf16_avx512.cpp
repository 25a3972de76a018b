// AVX-512 BF16 kernel set of the blocked GEMM for bf16 weights (driver and layouts:
// packed_gemm.h/.cpp). vdpbf16ps does 16 lanes x 2 products per instruction, so one instruction
// covers what two fp32 FMAs cover, on half the bytes.
//
// Layouts, with the instruction's semantics (lane j of dst += a.bf16[2j] * b.bf16[2j] +
// a.bf16[2j + 1] * b.bf16[2j + 1], products exact, sums in fp32 with round-to-nearest-even,
// denormal inputs read as zero):
//   x panel  [k / 2][12] bf16 pairs: pair q of x row i = (x[i][2q], x[i][2q + 1]) at 32-bit word
//            q * 12 + i, broadcast to every lane.
//   strip    [depth / 2][32] bf16 pairs: pair q of weight row j at word q * 32 + j (the shared
//            packer transposes the 32-bit pairs of the packed tiles), so one zmm holds pair q of
//            16 weight rows (lane j = row j).
// So acc lane j += w[j][2q] x[i][2q] + w[j][2q+1] x[i][2q+1]: x row i against weight row j, as in
// the fp32 tile. Tile: 12 x rows x 32 weight rows (24 accumulators + 2 strip vectors + 1
// broadcast).
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

constexpr int kTileX = 12;  // x rows per tile
constexpr int kStrip = 32;  // weight rows per strip

// Columns [0, depth) of rows [0, rows) of x into the panel [depth / 2][tile_x_rows] of bf16 pairs
// (32-bit words); rows past `rows` are zero. depth is a multiple of 32.
void pack_x_panel(const float* x, int64_t rows, int64_t ldx, int64_t depth, int tile_x_rows,
                  void* panel) {
  auto* dst = static_cast<uint32_t*>(panel);
  for (int64_t j = 0; j < tile_x_rows; ++j) {
    if (j >= rows) {
      for (int64_t q = 0; q < depth / 2; ++q) dst[q * tile_x_rows + j] = 0;
      continue;
    }
    const float* src = x + j * ldx;
    for (int64_t c = 0; c < depth; c += 32) {
      // vcvtne2ps2bf16(a, b): bf16 lanes 0..15 from b, 16..31 from a. So lanes follow the
      // columns c .. c + 31 and 32-bit word q holds columns c + 2q (low half), c + 2q + 1.
      const __m512bh bf =
          _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + c + 16), _mm512_loadu_ps(src + c));
      alignas(64) uint32_t pairs[16];
      _mm512_store_si512(pairs, (__m512i)bf);
      for (int64_t q = 0; q < 16; ++q) dst[(c / 2 + q) * tile_x_rows + j] = pairs[q];
    }
  }
}

void tile(const void* x_panel, const void* w_strip, int64_t depth, float* y, int64_t ldy,
          bool accumulate) {
  const auto* x = static_cast<const int32_t*>(x_panel);
  const auto* w = static_cast<const uint32_t*>(w_strip);
  __m512 acc[kTileX][2];
#pragma GCC unroll 12
  for (int i = 0; i < kTileX; ++i) {
    acc[i][0] = accumulate ? _mm512_loadu_ps(y + i * ldy) : _mm512_setzero_ps();
    acc[i][1] = accumulate ? _mm512_loadu_ps(y + i * ldy + 16) : _mm512_setzero_ps();
  }
#pragma GCC unroll 2
  for (int64_t pair = 0; pair < depth / 2; ++pair) {
    const auto w0 = (__m512bh)_mm512_load_si512(w + pair * kStrip);
    const auto w1 = (__m512bh)_mm512_load_si512(w + pair * kStrip + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kTileX; ++i) {
      const auto b = (__m512bh)_mm512_set1_epi32(x[pair * kTileX + i]);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], w0, b);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], w1, b);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < kTileX; ++i) {
    _mm512_storeu_ps(y + i * ldy, acc[i][0]);
    _mm512_storeu_ps(y + i * ldy + 16, acc[i][1]);
  }
}

}  // namespace

constinit const GemmKernels kGemmBf16Avx512{
    "bf16-avx512", 2, 2, kTileX, kStrip, pack_x_panel, pack_strips_bf16_pairs_avx2, tile};

}  // namespace qvl::ops::kernels
