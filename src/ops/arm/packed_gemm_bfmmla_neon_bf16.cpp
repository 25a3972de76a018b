// The BFMMLA register tile of the bf16 GEMM kernel set (kGemmBf16Neon; layouts and packers:
// packed_gemm_bfmmla_neon.cpp). Compiled for +bf16; called only at the i8mm level, whose CPUs
// have BF16 (cpu_detect.cpp).
//
// BFMMLA Vd, Vn, Vm: Vd (2 x 2 fp32, lane 2i + j) += Vn (2 x 4 bf16, row i at lanes 4i..4i+3)
// times Vm (2 x 4 bf16, row j) transposed: 16 multiply-adds. Both operands hold two rows of 4
// consecutive k, so x row pairs and weight row pairs are stored that way and lane 2i + j of an
// accumulator is x row i against weight row j.
//
// Why 6 x 16: 3 x row pairs x 8 weight row pairs = 24 accumulators, + the 3 x vectors of the
// current 4 k + 1-2 weight vectors in flight = 29 of 32 registers. Per 4 k: 24 BFMMLA (384
// multiply-adds) for 11 loads, 8 from the strip (8 KiB per depth block, in L1) and 3 from the x
// panel (streamed from L2): as in the fp32 tile, the strip is the operand reused across panels.
// 12 x 8 needs as many registers but loads twice as much of x per multiply-add.
// GCC schedules before register allocation by default and then hoists all 8 weight loads of a
// k-quad, spilling accumulators in the inner loop; without that pass the loop keeps 28 registers.
#pragma GCC optimize("no-schedule-insns")

#include <arm_neon.h>

#include "ops/arm/packed_gemm_neon.h"

namespace qvl::ops::kernels {

namespace {
constexpr int kXPairs = 3;  // x row pairs per tile
constexpr int kWPairs = 8;  // weight row pairs per strip
}  // namespace

void gemm_tile_bfmmla(const void* x_panel, const void* w_strip, int64_t depth, float* y,
                      int64_t ldy, bool accumulate) {
  const auto* x = static_cast<const bfloat16_t*>(x_panel);
  const auto* w = static_cast<const bfloat16_t*>(w_strip);
  float32x4_t acc[kXPairs][kWPairs];
  // y rows 2p and 2p + 1, columns 4c..4c+3, are the 64-bit halves of accumulators (p, 2c) and
  // (p, 2c + 1): ZIP1/ZIP2 on 64-bit lanes turn one layout into the other, both ways.
#pragma GCC unroll 3
  for (int p = 0; p < kXPairs; ++p) {
#pragma GCC unroll 4
    for (int c = 0; c < kWPairs / 2; ++c) {
      if (!accumulate) {
        acc[p][2 * c] = acc[p][2 * c + 1] = vdupq_n_f32(0);
        continue;
      }
      const float64x2_t r0 = vreinterpretq_f64_f32(vld1q_f32(y + 2 * p * ldy + 4 * c));
      const float64x2_t r1 = vreinterpretq_f64_f32(vld1q_f32(y + (2 * p + 1) * ldy + 4 * c));
      acc[p][2 * c] = vreinterpretq_f32_f64(vzip1q_f64(r0, r1));
      acc[p][2 * c + 1] = vreinterpretq_f32_f64(vzip2q_f64(r0, r1));
    }
  }
  // Per 4 k: the 3 x vectors stay, each weight vector is loaded once and used 3 times.
#pragma GCC unroll 2
  for (int64_t kq = 0; kq < depth / 4; ++kq) {
    const bfloat16_t* xk = x + kq * kXPairs * 8;
    const bfloat16_t* wk = w + kq * kWPairs * 8;
    const bfloat16x8_t x0 = vld1q_bf16(xk), x1 = vld1q_bf16(xk + 8), x2 = vld1q_bf16(xk + 16);
#pragma GCC unroll 8
    for (int q = 0; q < kWPairs; ++q) {
      const bfloat16x8_t wq = vld1q_bf16(wk + 8 * q);
      acc[0][q] = vbfmmlaq_f32(acc[0][q], x0, wq);
      acc[1][q] = vbfmmlaq_f32(acc[1][q], x1, wq);
      acc[2][q] = vbfmmlaq_f32(acc[2][q], x2, wq);
    }
  }
#pragma GCC unroll 3
  for (int p = 0; p < kXPairs; ++p) {
#pragma GCC unroll 4
    for (int c = 0; c < kWPairs / 2; ++c) {
      const float64x2_t a = vreinterpretq_f64_f32(acc[p][2 * c]);
      const float64x2_t b = vreinterpretq_f64_f32(acc[p][2 * c + 1]);
      vst1q_f32(y + 2 * p * ldy + 4 * c, vreinterpretq_f32_f64(vzip1q_f64(a, b)));
      vst1q_f32(y + (2 * p + 1) * ldy + 4 * c, vreinterpretq_f32_f64(vzip2q_f64(a, b)));
    }
  }
}

}  // namespace qvl::ops::kernels
