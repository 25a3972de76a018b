// The ARMv8.0 tiles of the int8 GEMM on stored q8/q4 strips, for CPUs without SDOT (Cortex-A53,
// A55, A72 as in the Raspberry Pi 3/4, A64FX); design in int8_gemm_neon.h. Baseline -march.
//
// NEON v8.0 has no byte dot product into int32: SMULL / SMULL2 multiply 8 signed bytes into 8
// int16, SMLAL / SMLAL2 add 8 more products to them, SADDLP / SADALP add int16 pairs into int32.
// One 16-byte weight load is 4 rows x one quad; DUP of an x row's quad (a 32-bit lane) gives the
// byte pattern that meets it, so SMULL (low half) holds rows 0-1 and SMULL2 rows 2-3 of the 4
// rows, each row's 4 products in 4 int16 lanes.
//
// int16 bound, per lane: x is clamped to [-127, 127] by the quantizer. q8: EOR 0x80 of q + 128 is
// q in [-128, 127], so a product is at most 128 * 127 = 16256 in magnitude and two (SMULL +
// SMLAL of quads 2p, 2p + 1) at most 32512 <= 32767; a third could reach 48768, so the lanes go
// to int32 (SADALP) after every pair of quads. q4: the nibbles q + 8 are in [0, 15], a product at
// most 15 * 127 = 1905, all 8 quads of a block at most 15240: one int16 lane per row and column
// of the quad takes the whole block, widened once (SADDLP) per block.
//
// ADDP of the rows 0-1 and rows 2-3 int32 vectors gives the 4 rows' exact block dots; from there
// the fp32 update is the SDOT tile's, instruction for instruction, so the bits are its bits.
//
// 4 x rows per tile: their whole x block stays in 8 registers, and with 8 int32 (q8) or int16
// (q4) accumulators, 2 weight operands, 2 patterns and 2 products a tile needs ~23 of the 32
// vector registers; 8 x rows (the SDOT tile's) would need 32 for x and accumulators alone, and
// SMULL has no by-element form to read the x quads in place. Each weight vector, loaded and
// converted once, meets 4 x rows.
#include <arm_neon.h>

#include "ops/arm/int8_gemm_neon.h"
#include "ops/arm/int8_tile_common_neon.h"
#include "ops/packed_matrix.h"

namespace qvl::ops::kernels {
namespace {

// Quad `lane` (0-3) of x half xh in every 32-bit lane.
template <int kLane>
inline int8x16_t quad_pattern(int8x16_t xh) {
  return vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(xh), kLane));
}

// q8, rows 4g .. 4g + 3 against R x rows: the exact block dots, one int32x4 per x row.
template <int R>
inline void q8_dots(const uint8_t* w, const int8x16_t (&x)[R][2], int32x4_t (&dot)[R]) {
  constexpr int64_t kQuadBytes = kStripRows * 4;
  const uint8x16_t flip = vdupq_n_u8(0x80);
  int32x4_t low[R], high[R];  // rows 0-1 and 2-3, each row's sum in two lanes
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    const int8x16_t q0 = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(w + 2 * p * kQuadBytes), flip));
    const int8x16_t q1 =
        vreinterpretq_s8_u8(veorq_u8(vld1q_u8(w + (2 * p + 1) * kQuadBytes), flip));
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      // Quads 2p, 2p + 1 are lanes (2p) % 4, + 1 of x half p / 2.
      const int8x16_t xh = x[i][p / 2];
      const int8x16_t x0 = p % 2 == 0 ? quad_pattern<0>(xh) : quad_pattern<2>(xh);
      const int8x16_t x1 = p % 2 == 0 ? quad_pattern<1>(xh) : quad_pattern<3>(xh);
      int16x8_t lo = vmull_s8(vget_low_s8(q0), vget_low_s8(x0));
      int16x8_t hi = vmull_high_s8(q0, x0);
      lo = vmlal_s8(lo, vget_low_s8(q1), vget_low_s8(x1));
      hi = vmlal_high_s8(hi, q1, x1);
      low[i] = p == 0 ? vpaddlq_s16(lo) : vpadalq_s16(low[i], lo);
      high[i] = p == 0 ? vpaddlq_s16(hi) : vpadalq_s16(high[i], hi);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) dot[i] = vpaddq_s32(low[i], high[i]);
}

// q4 nibbles q + 8, rows 4g .. 4g + 3 against R x rows: the block dots plus 8 * sum(x).
template <int R>
inline void q4_dots(const uint8_t* w, const int8x16_t (&x)[R][2], int32x4_t (&dot)[R]) {
  constexpr int64_t kQuadBytes = kStripRows * 4;
  const uint8x16_t low4 = vdupq_n_u8(0x0f);
  int16x8_t lo[R], hi[R];  // rows 0-1 and 2-3: 8 products per lane (see the int16 bound)
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    const uint8x16_t nibbles = vld1q_u8(w + p * kQuadBytes);
    const int8x16_t q0 = vreinterpretq_s8_u8(vandq_u8(nibbles, low4));  // quad 2p
    const int8x16_t q1 = vreinterpretq_s8_u8(vshrq_n_u8(nibbles, 4));   // quad 2p + 1
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      const int8x16_t xh = x[i][p / 2];
      const int8x16_t x0 = p % 2 == 0 ? quad_pattern<0>(xh) : quad_pattern<2>(xh);
      const int8x16_t x1 = p % 2 == 0 ? quad_pattern<1>(xh) : quad_pattern<3>(xh);
      if (p == 0) {
        lo[i] = vmull_s8(vget_low_s8(q0), vget_low_s8(x0));
        hi[i] = vmull_high_s8(q0, x0);
      } else {
        lo[i] = vmlal_s8(lo[i], vget_low_s8(q0), vget_low_s8(x0));
        hi[i] = vmlal_high_s8(hi[i], q0, x0);
      }
      lo[i] = vmlal_s8(lo[i], vget_low_s8(q1), vget_low_s8(x1));
      hi[i] = vmlal_high_s8(hi[i], q1, x1);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) dot[i] = vpaddq_s32(vpaddlq_s16(lo[i]), vpaddlq_s16(hi[i]));
}

template <int R, Stored W>
void smull_tile(const Int8Tile& t) {
  constexpr bool kQ4 = W == Stored::kQ4;
  const StripHalf<W> half(t);
  // Locals: the compiler cannot tell that the stores to c leave t alone.
  const int8_t* const xq = t.xq;
  const float* const xscale = t.xscale;
  const int32_t* const xsum = t.xsum;
  float* const c0 = t.c;
  const int64_t ldx = t.ldx, ldxs = t.ldxs, ldc = t.ldc;
  const int64_t nblocks = t.nblocks;
  for (int64_t b = 0; b < nblocks; ++b) {
    half.prefetch(b);
    const uint8_t* weights = half.weights(b);
    const uint8_t* fp16 = half.scales(b);
    int8x16_t x[R][2];  // quads 0-3 and 4-7 of each x row
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      const int8_t* xi = xq + i * ldx + b * 32;
      x[i][0] = vld1q_s8(xi);
      x[i][1] = vld1q_s8(xi + 16);
    }
    // Not unrolled, and x opaque in each group: else GCC hoists the 4 groups' weights or all
    // 8 R quad patterns out of the loop (or reloads the quads as scalars) and spills.
#pragma GCC unroll 1
    for (int g = 0; g < 4; ++g) {
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) asm("" : "+w"(x[i][0]), "+w"(x[i][1]));
      int32x4_t dot[R];
      if constexpr (kQ4) {
        q4_dots<R>(weights + g * 16, x, dot);
      } else {
        q8_dots<R>(weights + g * 16, x, dot);
      }
      const float32x4_t ws = widen_scales(fp16 + g * 8);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        // q4: less 8 * sum(x). Dots are below 32 * 255 * 127 < 2^24 in magnitude, so SCVTF is
        // exact: the float the SDOT tile makes from its kMagic bits (one instruction for two).
        if constexpr (kQ4) dot[i] = vsubq_s32(dot[i], vdupq_n_s32(xsum[i * ldxs + b] * 8));
        float* c = c0 + i * ldc + g * 4;
        const float32x4_t scale = vmulq_n_f32(ws, xscale[i * ldxs + b]);
        vst1q_f32(c, vfmaq_f32(vld1q_f32(c), vcvtq_f32_s32(dot[i]), scale));
      }
    }
  }
}

}  // namespace

void int8_tile_q8s_neon_smull(const Int8Tile& t) {
  with_tile_rows<kInt8NeonSmullXRows>(
      t.rows, [&](auto rows) { smull_tile<decltype(rows)::value, Stored::kQ8>(t); });
}

void int8_tile_q4s_neon_smull(const Int8Tile& t) {
  with_tile_rows<kInt8NeonSmullXRows>(
      t.rows, [&](auto rows) { smull_tile<decltype(rows)::value, Stored::kQ4>(t); });
}

}  // namespace qvl::ops::kernels
