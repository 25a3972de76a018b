// The USMMLA tiles of the int8 GEMM on stored q8/q4 strips (design in int8_gemm_neon.h).
// Compiled with -march=armv8.2-a+dotprod+i8mm.
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

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

// Blocks per pass: the tile's 4 passes over a chunk (one per group of 4 rows) find the chunk's
// weights (8 KiB q8) and laid-out x (7 KiB) in L1.
constexpr int64_t kChunkBlocks = 16;

// What the 4 passes over a chunk read of x pair j (rows 2j, 2j + 1) in one block, laid out once
// by lay_out_pairs: the USMMLA operands, the accumulators' starts and the x scales, in the lanes'
// order [x 2j, x 2j + 1, x 2j, x 2j + 1] of a 2 x 2 tile's rows (see i8mm_tile).
struct alignas(16) PairBlock {
  int8_t x[4][16];      // columns 8p .. 8p + 7 of row 2j, then of row 2j + 1 (past R: zeros)
  int32_t start[2][4];  // two copies, one per accumulator: each starts with its own load
  float xscale[4];
};

// The chunk's PairBlocks, [block][pair]. Plain 8-byte copies (general registers, load and store
// pipes): the pairing takes none of the vector pipes the passes are short of.
template <int R, Stored W>
void lay_out_pairs(const Int8Tile& t, int64_t b0, int64_t nb, PairBlock* out) {
  constexpr int kPairs = (R + 1) / 2;
  // q8 weights are q + 128, q4 nibbles q + 8: the dots start at kMagic's bits less that offset
  // times sum(x).
  constexpr int32_t kOffset = W == Stored::kQ4 ? 8 : 128;
  for (int64_t b = 0; b < nb; ++b) {
    for (int j = 0; j < kPairs; ++j) {
      PairBlock& pb = out[b * kPairs + j];
      const bool second = 2 * j + 1 < R;
      const int64_t i0 = 2 * j, i1 = second ? 2 * j + 1 : 2 * j;
      const int8_t* x0 = t.xq + i0 * t.ldx + (b0 + b) * 32;
      const int8_t* x1 = t.xq + i1 * t.ldx + (b0 + b) * 32;
      for (int p = 0; p < 4; ++p) {
        uint64_t row0, row1 = 0;
        std::memcpy(&row0, x0 + 8 * p, 8);
        if (second) std::memcpy(&row1, x1 + 8 * p, 8);
        std::memcpy(pb.x[p], &row0, 8);
        std::memcpy(pb.x[p] + 8, &row1, 8);
      }
      const int64_t at0 = i0 * t.ldxs + b0 + b, at1 = i1 * t.ldxs + b0 + b;
      const int32_t s0 = kMagicBits - kOffset * t.xsum[at0];
      const int32_t s1 = kMagicBits - kOffset * t.xsum[at1];
      for (auto& start : pb.start) {
        start[0] = start[2] = s0;
        start[1] = start[3] = s1;
      }
      pb.xscale[0] = pb.xscale[2] = t.xscale[at0];
      pb.xscale[1] = pb.xscale[3] = second ? t.xscale[at1] : 0.0f;
    }
  }
}

// A pass per group of 4 rows over a chunk of blocks, each pair's fp32 sums kept in registers as
// 2 x 2 tiles ([4g, 4g + 1] and [4g + 2, 4g + 3] x [2j, 2j + 1]) across the chunk: C is read
// and written once per chunk (ZIP/UZP to and from the tiles), not per block.
template <int R, Stored W>
[[gnu::noinline]] void i8mm_tile(const Int8Tile& t) {
  constexpr bool kQ4 = W == Stored::kQ4;
  constexpr int kPairs = (R + 1) / 2;
  constexpr int64_t kQuadBytes = StripHalf<W>::kQuadBytes;
  const StripHalf<W> half(t);
  float* const c0 = t.c;
  const int64_t ldc = t.ldc;
  PairBlock pairs[kChunkBlocks * kPairs];
  for (int64_t b0 = 0; b0 < t.nblocks; b0 += kChunkBlocks) {
    const int64_t nb = std::min(t.nblocks - b0, kChunkBlocks);
    lay_out_pairs<R, W>(t, b0, nb, pairs);
#pragma GCC unroll 1
    for (int g = 0; g < 4; ++g) {
      float32x4_t sum[kPairs][2];
#pragma GCC unroll 4
      for (int j = 0; j < kPairs; ++j) {
        const float32x4_t row0 = vld1q_f32(c0 + 2 * j * ldc + g * 4);
        const float32x4_t row1 =
            2 * j + 1 < R ? vld1q_f32(c0 + (2 * j + 1) * ldc + g * 4) : vdupq_n_f32(0.0f);
        sum[j][0] = vzip1q_f32(row0, row1);
        sum[j][1] = vzip2q_f32(row0, row1);
      }
      for (int64_t b = 0; b < nb; ++b) {
        if (g == 0) half.prefetch(b0 + b);
        const uint8_t* w = half.weights(b0 + b) + g * 16;
        const PairBlock* pb = pairs + b * kPairs;
        int32x4_t acc[kPairs][2];
#pragma GCC unroll 4
        for (int j = 0; j < kPairs; ++j) {
          acc[j][0] = vld1q_s32(pb[j].start[0]);
          acc[j][1] = vld1q_s32(pb[j].start[1]);
        }
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
#pragma GCC unroll 4
          for (int j = 0; j < kPairs; ++j) {
            const int8x16_t x = vld1q_s8(pb[j].x[p]);
            acc[j][0] = vusmmlaq_s32(acc[j][0], pair01, x);
            acc[j][1] = vusmmlaq_s32(acc[j][1], pair23, x);
          }
        }
        schedule_barrier();  // the scale products after the dots, not all live across them
        // Scales in the tiles' lanes: [w 4g, 4g, 4g + 1, 4g + 1] (and 4g + 2, 4g + 3) times
        // [x 2j, 2j + 1, 2j, 2j + 1]: each product is w_scale[r] * x_scale[i], as in every tile.
        const float32x4_t ws = widen_scales(half.scales(b0 + b) + g * 8);
        const float32x4_t ws01 = vzip1q_f32(ws, ws), ws23 = vzip2q_f32(ws, ws);
#pragma GCC unroll 4
        for (int j = 0; j < kPairs; ++j) {
          const float32x4_t xs = vld1q_f32(pb[j].xscale);
          const float32x4_t magic = vdupq_n_f32(kMagic);
          sum[j][0] = vfmaq_f32(sum[j][0], vsubq_f32(vreinterpretq_f32_s32(acc[j][0]), magic),
                                vmulq_f32(ws01, xs));
          sum[j][1] = vfmaq_f32(sum[j][1], vsubq_f32(vreinterpretq_f32_s32(acc[j][1]), magic),
                                vmulq_f32(ws23, xs));
        }
      }
#pragma GCC unroll 4
      for (int j = 0; j < kPairs; ++j) {
        vst1q_f32(c0 + 2 * j * ldc + g * 4, vuzp1q_f32(sum[j][0], sum[j][1]));
        if (2 * j + 1 < R)
          vst1q_f32(c0 + (2 * j + 1) * ldc + g * 4, vuzp2q_f32(sum[j][0], sum[j][1]));
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
