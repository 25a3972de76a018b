// The USMMLA tiles of the int8 GEMM on stored q8/q4 strips (design in int8_gemm_neon.h).
// Compiled with -march=armv8.2-a+dotprod+i8mm.
#include <arm_neon.h>

#include "ops/arm/int8_gemm_neon.h"
#include "ops/arm/int8_tile_common_neon.h"
#include "ops/packed_matrix.h"

namespace qvl::ops::kernels {
namespace {

// 4 rows r .. r + 3 as two USMMLA operands, [r, r + 1] and [r + 2, r + 3] x 8 columns, from their
// 4-byte groups of columns 8p .. 8p + 3 (a) and 8p + 4 .. 8p + 7 (b).
inline void row_pairs(uint8x16_t a, uint8x16_t b, uint8x16_t& pair01, uint8x16_t& pair23) {
  const uint32x4_t a32 = vreinterpretq_u32_u8(a), b32 = vreinterpretq_u32_u8(b);
  pair01 = vreinterpretq_u8_u32(vzip1q_u32(a32, b32));
  pair23 = vreinterpretq_u8_u32(vzip2q_u32(a32, b32));
}

template <int R, Stored W>
void i8mm_tile(const Int8Tile& t) {
  constexpr bool kQ4 = W == Stored::kQ4;
  constexpr int kPairs = (R + 1) / 2;  // x rows 2j, 2j + 1 (past R: zeros)
  constexpr int64_t kQuadBytes = StripHalf<W>::kQuadBytes;
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
    // x[j][p]: columns 8p .. 8p + 7 of x rows 2j and 2j + 1, the whole block.
    int8x16_t x[kPairs][4];
#pragma GCC unroll 8
    for (int j = 0; j < kPairs; ++j) {
      const int8_t* x0 = xq + 2 * j * ldx + b * 32;
      const int8_t* x1 = x0 + ldx;
#pragma GCC unroll 8
      for (int p = 0; p < 4; ++p) {
        x[j][p] =
            vcombine_s8(vld1_s8(x0 + 8 * p), 2 * j + 1 < R ? vld1_s8(x1 + 8 * p) : vdup_n_s8(0));
      }
    }
    // Every tile starts at kMagicBits less the weights' offset times sum(x) of its x row, in the
    // lanes' order [x 2j, x 2j + 1, x 2j, x 2j + 1] (see below).
    const int32x4_t magic = vdupq_n_s32(kMagicBits);
    int32x4_t start[kPairs];
#pragma GCC unroll 8
    for (int j = 0; j < kPairs; ++j) {
      const int32x4_t s0 = vld1q_dup_s32(xsum + 2 * j * ldxs + b);
      const int32x4_t s1 = 2 * j + 1 < R ? vld1q_dup_s32(xsum + (2 * j + 1) * ldxs + b) : s0;
      start[j] = vsubq_s32(magic, vshlq_n_s32(vzip1q_s32(s0, s1), kQ4 ? 3 : 7));
    }
    // Rows 4g .. 4g + 3 of the tile: per x pair, [4g, 4g + 1] and [4g + 2, 4g + 3] x [2j, 2j + 1].
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      int32x4_t acc[kPairs][2];
#pragma GCC unroll 8
      for (int j = 0; j < kPairs; ++j) acc[j][0] = acc[j][1] = start[j];
      const uint8_t* w = weights + g * 16;
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        uint8x16_t pair01, pair23;
        if constexpr (kQ4) {
          const uint8x16_t nibbles = vld1q_u8(w + p * kQuadBytes);
          row_pairs(vandq_u8(nibbles, vdupq_n_u8(0x0f)), vshrq_n_u8(nibbles, 4), pair01, pair23);
        } else {
          row_pairs(vld1q_u8(w + 2 * p * kQuadBytes), vld1q_u8(w + (2 * p + 1) * kQuadBytes),
                    pair01, pair23);
        }
#pragma GCC unroll 8
        for (int j = 0; j < kPairs; ++j) {
          acc[j][0] = vusmmlaq_s32(acc[j][0], pair01, x[j][p]);
          acc[j][1] = vusmmlaq_s32(acc[j][1], pair23, x[j][p]);
        }
      }
      const float32x4_t ws = widen_scales(fp16 + g * 8);
// acc lanes: [w 4g x 2j, w 4g x 2j+1, w 4g+1 x 2j, w 4g+1 x 2j+1] (and 4g+2, 4g+3).
#pragma GCC unroll 8
      for (int j = 0; j < kPairs; ++j) {
#pragma GCC unroll 8
        for (int e = 0; e < 2; ++e) {
          const int64_t i = 2 * j + e;
          if (i >= R) break;
          const int32x4_t dot =
              e == 0 ? vuzp1q_s32(acc[j][0], acc[j][1]) : vuzp2q_s32(acc[j][0], acc[j][1]);
          float* c = c0 + i * ldc + g * 4;
          const float32x4_t scale = vmulq_n_f32(ws, xscale[i * ldxs + b]);
          vst1q_f32(
              c, vfmaq_f32(vld1q_f32(c), vsubq_f32(vreinterpretq_f32_s32(dot), vdupq_n_f32(kMagic)),
                           scale));
        }
      }
    }
  }
}

}  // namespace

void int8_tile_q8s_neon_i8mm(const Int8Tile& t) {
  with_tile_rows<kInt8NeonI8mmXRows>(
      t.rows, [&](auto rows) { i8mm_tile<decltype(rows)::value, Stored::kQ8>(t); });
}

void int8_tile_q4s_neon_i8mm(const Int8Tile& t) {
  with_tile_rows<kInt8NeonI8mmXRows>(
      t.rows, [&](auto rows) { i8mm_tile<decltype(rows)::value, Stored::kQ4>(t); });
}

}  // namespace qvl::ops::kernels
