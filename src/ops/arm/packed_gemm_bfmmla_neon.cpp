// The BFMMLA kernel set of the blocked GEMM for bf16 weights (kGemmBf16Neon; driver:
// packed_gemm.h/.cpp): its packers, in baseline NEON, and the tile of
// packed_gemm_bfmmla_neon_bf16.cpp. The weights go in as stored (no widening); x is rounded to
// bf16 (nearest even, f32_to_bf16), as on AVX-512 with vdpbf16ps.
//
// Layouts (BFMMLA takes two rows of 4 consecutive k per operand):
//   x panel  [depth / 4][tile_x_rows / 2][2][4] bf16: per 4 k, each pair of x rows as one vector
//            (row 2p at lanes 0..3, row 2p + 1 at 4..7); rows past m are zero.
//   strip    [depth / 4][strip_rows / 2][2][4] bf16: the same for weight rows 2q, 2q + 1.
//
// Arithmetic per output (BFMMLA with FPCR.EBF = 0, which Linux leaves clear; the Arm ARM's
// BFDotAdd): per 2 k, sum = sum + (x0 w0 + x1 w1), both additions rounded to odd, bf16
// denormal inputs and fp32 denormal results flushed to zero; the products are exact. Two such
// steps per instruction, in k order; the sums are stored and reloaded exactly between depth blocks,
// then + bias. As in the fp32 tile, nothing depends on m or the row's place in a panel, so a row's
// bits do not depend on the batch. The tests model it bit for bit (packed_gemm_bfmmla_test.cpp).
#include <arm_neon.h>

#include "base/half.h"
#include "ops/arm/packed_gemm_neon.h"
#include "ops/packed_gemm.h"

namespace qvl::ops::kernels {
namespace {

constexpr int kTileX = 6;   // x rows per tile (3 row pairs)
constexpr int kStrip = 16;  // weight rows per strip (8 row pairs)

void pack_x_panel_bf16_pairs(const float* x, int64_t rows, int64_t ldx, int64_t depth,
                             int tile_x_rows, void* panel) {
  auto* dst = static_cast<uint16_t*>(panel);
  for (int64_t i = 0; i < tile_x_rows; ++i) {
    const float* src = x + i * ldx;
    // Row i is half (i % 2) of row pair i / 2's vector in every group of 4 k.
    uint16_t* out = dst + (i / 2) * 8 + (i % 2) * 4;
    for (int64_t c = 0; c < depth; ++c) {
      out[(c / 4) * tile_x_rows * 4 + c % 4] = i < rows ? f32_to_bf16(src[c]) : 0;
    }
  }
}

// Rows [r0, r0 + strips * strip_rows) x columns [k0, k0 + depth) of bf16 groups into strips. r0 is
// a multiple of kGemmRowBlock, so every 4 rows are one packed group, whose block holds 4 rows of
// 32 bf16: per 4 k, ZIP1/ZIP2 on 64-bit lanes pair rows 0 and 1, and rows 2 and 3.
void pack_strips_bf16_pairs(const GemmProblem& p, int64_t r0, int64_t strips, int strip_rows,
                            int64_t k0, int64_t depth, void* out) {
  auto* const dst = static_cast<uint16_t*>(out);
  const int64_t groups = (p.n + kRows - 1) / kRows;
  const int64_t pairs = strip_rows / 2;
  for (int64_t r4 = 0; r4 < strips * strip_rows; r4 += kRows) {
    uint16_t* const strip = dst + (r4 / strip_rows) * depth * strip_rows + (r4 % strip_rows) * 4;
    const int64_t group = (r0 + r4) / kRows;
    for (int64_t b = k0 / kCols; b < (k0 + depth) / kCols; ++b) {
      // Row pair 0 of the group for k-quad c of the block at o + c * pairs * 8, pair 1 after it.
      uint16_t* const o = strip + (b * kCols - k0) / 4 * pairs * 8;
      if (group >= groups) {  // rows past the packed groups are zero
        for (int64_t c = 0; c < kCols / 4; ++c) vst1q_u16(o + c * pairs * 8, vdupq_n_u16(0));
        for (int64_t c = 0; c < kCols / 4; ++c) vst1q_u16(o + c * pairs * 8 + 8, vdupq_n_u16(0));
        continue;
      }
      const auto* src = reinterpret_cast<const uint64_t*>(p.weights + group * p.group_bytes +
                                                          p.scale_bytes + b * kBf16TileBytes);
      for (int64_t h = 0; h < kCols / 8; ++h) {  // 8 columns = 2 k-quads per 16-byte load
        uint64x2_t row[kRows];
        for (int r = 0; r < kRows; ++r) row[r] = vld1q_u64(src + r * (kCols / 4) + 2 * h);
        uint16_t* const q0 = o + 2 * h * pairs * 8;
        uint16_t* const q1 = q0 + pairs * 8;
        vst1q_u16(q0, vreinterpretq_u16_u64(vzip1q_u64(row[0], row[1])));
        vst1q_u16(q0 + 8, vreinterpretq_u16_u64(vzip1q_u64(row[2], row[3])));
        vst1q_u16(q1, vreinterpretq_u16_u64(vzip2q_u64(row[0], row[1])));
        vst1q_u16(q1 + 8, vreinterpretq_u16_u64(vzip2q_u64(row[2], row[3])));
      }
    }
  }
}

}  // namespace

constinit const GemmKernels kGemmBf16Neon{
    "bf16-bfmmla-neon", 2, 2, kTileX, kStrip, pack_x_panel_bf16_pairs, pack_strips_bf16_pairs,
    gemm_tile_bfmmla};

}  // namespace qvl::ops::kernels
