// The SDOT tiles of the int8 GEMM on stored q8/q4 strips (design in int8_gemm_neon.h).
// Compiled with -march=armv8.2-a+dotprod.
#include <arm_neon.h>

#include <algorithm>
#include <type_traits>

#include "ops/arm/int8_gemm_neon.h"
#include "ops/arm/int8_tile_common_neon.h"
#include "ops/packed_matrix.h"

namespace qvl::ops::kernels {
namespace {

// Blocks per pass of the batch tile: its 4 passes over a chunk (one per group of 4 rows) find the
// chunk's weights (8 KiB q8) and x (4 KiB) in L1.
constexpr int64_t kChunkBlocks = 16;

// f(integral_constant<int, l>) for l = 0..3: SDOT's lane must be a constant.
template <class F>
inline void each_lane(F&& f) {
  f(std::integral_constant<int, 0>{});
  f(std::integral_constant<int, 1>{});
  f(std::integral_constant<int, 2>{});
  f(std::integral_constant<int, 3>{});
}

// acc plus the dots of w[l] (4 rows x quad l) with quad l of x, l = 0..3.
inline int32x4_t sdot_quads(int32x4_t acc, const int8x16_t (&w)[4], int8x16_t x) {
  acc = vdotq_laneq_s32(acc, w[0], x, 0);
  acc = vdotq_laneq_s32(acc, w[1], x, 1);
  acc = vdotq_laneq_s32(acc, w[2], x, 2);
  return vdotq_laneq_s32(acc, w[3], x, 3);
}

// Quads 4h .. 4h + 3 of the 4 rows whose first quad is at w, as signed operands: q8 q + 128
// EOR 0x80 = q; q4 (nibble pairs 2h, 2h + 1) 16 q, from q + 8 EOR 8 = q in 4-bit two's
// complement, shifted into the high half of a byte (SHL #4 for the low nibble, AND 0xf0 for the
// high one): 3 instructions per pair against 2 and a per-x-row correction for q + 8 itself.
template <Stored W>
inline void signed_quads(const uint8_t* w, int h, int8x16_t (&q)[4]) {
  constexpr int64_t kQuadBytes = StripHalf<W>::kQuadBytes;
  if constexpr (W == Stored::kQ4) {
#pragma GCC unroll 2
    for (int p = 0; p < 2; ++p) {
      const uint8x16_t n = veorq_u8(vld1q_u8(w + (2 * h + p) * kQuadBytes), vdupq_n_u8(0x88));
      q[2 * p] = vreinterpretq_s8_u8(vshlq_n_u8(n, 4));
      q[2 * p + 1] = vreinterpretq_s8_u8(vandq_u8(n, vdupq_n_u8(0xf0)));
    }
  } else {
#pragma GCC unroll 4
    for (int l = 0; l < 4; ++l) {
      q[l] =
          vreinterpretq_s8_u8(veorq_u8(vld1q_u8(w + (4 * h + l) * kQuadBytes), vdupq_n_u8(0x80)));
    }
  }
}

// 2 .. 8 x rows: a pass per group of 4 rows over a chunk of blocks, with the group's fp32 sums
// for every x row in registers across the chunk (C is read and written once per chunk, not per
// block). Per block and x row: 8 SDOT, the start (a load), the int-to-float, the scale product
// and the FMLA; the weights' conversion is shared by the x rows.
template <int R, Stored W>
[[gnu::noinline]] void batch_tile(const Int8Tile& t) {
  constexpr bool kQ4 = W == Stored::kQ4;
  const StripHalf<W> half(t);
  // Locals: the compiler cannot tell that the stores to c leave t alone.
  const int8_t* const xq = t.xq;
  const float* const xscale = t.xscale;
  float* const c0 = t.c;
  const int64_t ldx = t.ldx, ldxs = t.ldxs, ldc = t.ldc;
  const int64_t nblocks = t.nblocks;
  // q8 dots start at kMagic's bits (see kMagic); q4 ones at 0, 16 times too large (SCVTF #4
  // divides by 16 exactly: |16 dot| <= 16 * 32 * 8 * 127 < 2^24).
  const StartRows& starts = kQ4 ? kZeroStarts : kMagicStarts;
  for (int64_t b0 = 0; b0 < nblocks; b0 += kChunkBlocks) {
    const int64_t b1 = std::min(nblocks, b0 + kChunkBlocks);
#pragma GCC unroll 1
    for (int g = 0; g < 4; ++g) {
      float32x4_t sum[R];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) sum[i] = vld1q_f32(c0 + i * ldc + g * 4);
      for (int64_t b = b0; b < b1; ++b) {
        if (g == 0) half.prefetch(b);
        const uint8_t* w = half.weights(b) + g * 16;
        const int32_t* start = starts_at(starts, b);
        int32x4_t acc[R];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) acc[i] = vld1q_s32(start + 4 * i);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          int8x16_t q[4];
          signed_quads<W>(w, h, q);
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i) {
            acc[i] = sdot_quads(acc[i], q, vld1q_s8(xq + i * ldx + b * 32 + h * 16));
          }
        }
        schedule_barrier();  // the scale products after the dots, not all live across them
        const float32x4_t ws = widen_scales(half.scales(b) + g * 8);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          const float32x4_t dot =
              kQ4 ? vcvtq_n_f32_s32(acc[i], 4)
                  : vsubq_f32(vreinterpretq_f32_s32(acc[i]), vdupq_n_f32(kMagic));
          sum[i] = vfmaq_f32(sum[i], dot, vmulq_n_f32(ws, xscale[i * ldxs + b]));
        }
      }
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) vst1q_f32(c0 + i * ldc + g * 4, sum[i]);
    }
  }
}

// m = 1 (decode): block by block over all 16 rows, their 4 fp32 sums in registers throughout. A
// quad (or nibble pair) of the 16 rows is 64 contiguous bytes: one LD1 of 4 vectors. Not inlined
// (nor is batch_tile): one call per tile, and scripts/arm_mca.sh finds their loops by name.
template <Stored W>
[[gnu::noinline]] void decode_tile(const Int8Tile& t) {
  constexpr int64_t kQuadBytes = StripHalf<W>::kQuadBytes;
  const StripHalf<W> half(t);
  const int8_t* const xq = t.xq;
  const float* const xscale = t.xscale;
  const int32_t* const xsum = t.xsum;
  float* const c = t.c;
  float32x4_t sum[4];
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) sum[g] = vld1q_f32(c + g * 4);
  for (int64_t b = 0; b < t.nblocks; ++b) {
    half.prefetch(b);
    const uint8_t* w = half.weights(b);
    const int8x16x2_t x = vld1q_s8_x2(xq + b * 32);
    // The dots start at kMagic's bits (loads, see starts_at) and are kMagic + dot as floats; the
    // q4 nibbles are q + 8, so theirs less kMagic + 8 * sum(x) (exact: bits plus an integer).
    const int32_t* start = starts_at(kMagicStarts, b);
    int32x4_t acc[4];
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) acc[g] = vld1q_s32(start + 4 * g);
    float32x4_t offset = vdupq_n_f32(kMagic);
    if constexpr (W == Stored::kQ4) {
      offset = vreinterpretq_f32_s32(
          vaddq_s32(vdupq_n_s32(kMagicBits), vshlq_n_s32(vld1q_dup_s32(xsum + b), 3)));
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        schedule_barrier();  // one LD1's 4 vectors at a time
        const uint8x16x4_t n = vld1q_u8_x4(w + p * kQuadBytes);
        const int8x16_t xh = x.val[p / 2];
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) {
          // Nibbles q + 8: AND 0x0f and USHR #4 give quads 2p and 2p + 1.
          const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(n.val[g], vdupq_n_u8(0x0f)));
          const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(n.val[g], 4));
          if (p % 2 == 0) {
            acc[g] = vdotq_laneq_s32(vdotq_laneq_s32(acc[g], lo, xh, 0), hi, xh, 1);
          } else {
            acc[g] = vdotq_laneq_s32(vdotq_laneq_s32(acc[g], lo, xh, 2), hi, xh, 3);
          }
        }
      }
    } else {
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        each_lane([&](auto lane) {
          constexpr int kLane = decltype(lane)::value;
          schedule_barrier();  // one LD1's 4 vectors at a time
          const uint8x16x4_t n = vld1q_u8_x4(w + (4 * h + kLane) * kQuadBytes);
#pragma GCC unroll 4
          for (int g = 0; g < 4; ++g) {
            const int8x16_t q = vreinterpretq_s8_u8(veorq_u8(n.val[g], vdupq_n_u8(0x80)));
            acc[g] = vdotq_laneq_s32(acc[g], q, x.val[h], kLane);
          }
        });
      }
    }
    const uint16x8x2_t fp16 = vld1q_u16_x2(reinterpret_cast<const uint16_t*>(half.scales(b)));
    const float xs = xscale[b];
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      const float16x8_t s8 = vreinterpretq_f16_u16(fp16.val[g / 2]);
      const float32x4_t ws = g % 2 == 0 ? vcvt_f32_f16(vget_low_f16(s8)) : vcvt_high_f32_f16(s8);
      const float32x4_t dot = vsubq_f32(vreinterpretq_f32_s32(acc[g]), offset);
      sum[g] = vfmaq_f32(sum[g], dot, vmulq_n_f32(ws, xs));
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) vst1q_f32(c + g * 4, sum[g]);
}

template <Stored W>
void dotprod_tile(const Int8Tile& t) {
  with_tile_rows<kInt8NeonDotprodXRows>(t.rows, [&](auto rows) {
    if constexpr (decltype(rows)::value == 1) {
      decode_tile<W>(t);
    } else {
      batch_tile<decltype(rows)::value, W>(t);
    }
  });
}

}  // namespace

void int8_tile_q8s_neon_dotprod(const Int8Tile& t) {
  dotprod_tile<Stored::kQ8>(t);
}

void int8_tile_q4s_neon_dotprod(const Int8Tile& t) {
  dotprod_tile<Stored::kQ4>(t);
}

}  // namespace qvl::ops::kernels
