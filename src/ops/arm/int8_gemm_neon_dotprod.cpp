// The SDOT tiles of the int8 GEMM on stored q8/q4 strips (design in int8_gemm_neon.h).
// Compiled with -march=armv8.2-a+dotprod.
#include <arm_neon.h>

#include <type_traits>

#include "ops/arm/int8_gemm_neon.h"
#include "ops/arm/int8_tile_common_neon.h"
#include "ops/packed_matrix.h"

namespace qvl::ops::kernels {
namespace {

// f(integral_constant<int, l>) for l = 0..3: SDOT's lane must be a constant.
template <class F>
inline void each_lane(F&& f) {
  f(std::integral_constant<int, 0>{});
  f(std::integral_constant<int, 1>{});
  f(std::integral_constant<int, 2>{});
  f(std::integral_constant<int, 3>{});
}

template <int R, Stored W>
void dotprod_tile(const Int8Tile& t) {
  constexpr bool kQ4 = W == Stored::kQ4;
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
    // The whole block of every x row: quads 0-3 in x[i][0], 4-7 in x[i][1].
    int8x16_t x[R][2];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const int8_t* xi = xq + i * ldx + b * 32;
      x[i][0] = vld1q_s8(xi);
      x[i][1] = vld1q_s8(xi + 16);
    }
    // The dot products start at the bits of kMagic (q4: less 8 * sum(x)), see kMagic.
    const int32x4_t magic = vdupq_n_s32(kMagicBits);
    int32x4_t start[R];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      start[i] = kQ4 ? vsubq_s32(magic, vshlq_n_s32(vld1q_dup_s32(xsum + i * ldxs + b), 3)) : magic;
    }
    // Rows 4g .. 4g + 3 of the tile: one int32x4 per x row.
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      int32x4_t acc[R];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) acc[i] = start[i];
      const uint8_t* w = weights + g * 16;
      if constexpr (kQ4) {
        const uint8x16_t low4 = vdupq_n_u8(0x0f);
#pragma GCC unroll 4
        for (int pair = 0; pair < 4; ++pair) {
          const uint8x16_t nibbles = vld1q_u8(w + pair * kQuadBytes);
          const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(nibbles, low4));
          const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(nibbles, 4));
// Quads 2 pair (lo) and 2 pair + 1 (hi): lanes (2 pair) % 4, + 1 of x half pair / 2.
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i) {
            const int8x16_t xh = x[i][pair / 2];
            if (pair % 2 == 0) {
              acc[i] = vdotq_laneq_s32(acc[i], lo, xh, 0);
              acc[i] = vdotq_laneq_s32(acc[i], hi, xh, 1);
            } else {
              acc[i] = vdotq_laneq_s32(acc[i], lo, xh, 2);
              acc[i] = vdotq_laneq_s32(acc[i], hi, xh, 3);
            }
          }
        }
      } else {
        const uint8x16_t flip = vdupq_n_u8(0x80);
#pragma GCC unroll 8
        for (int h = 0; h < 2; ++h) {
          each_lane([&](auto lane) {
            constexpr int kLane = decltype(lane)::value;
            const int8x16_t q =
                vreinterpretq_s8_u8(veorq_u8(vld1q_u8(w + (4 * h + kLane) * kQuadBytes), flip));
#pragma GCC unroll 8
            for (int i = 0; i < R; ++i) acc[i] = vdotq_laneq_s32(acc[i], q, x[i][h], kLane);
          });
        }
      }
      const float32x4_t ws = widen_scales(fp16 + g * 8);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        float* c = c0 + i * ldc + g * 4;
        const float32x4_t scale = vmulq_n_f32(ws, xscale[i * ldxs + b]);
        const float32x4_t dot = vsubq_f32(vreinterpretq_f32_s32(acc[i]), vdupq_n_f32(kMagic));
        vst1q_f32(c, vfmaq_f32(vld1q_f32(c), dot, scale));
      }
    }
  }
}

}  // namespace

void int8_tile_q8s_neon_dotprod(const Int8Tile& t) {
  with_tile_rows<kInt8NeonDotprodXRows>(
      t.rows, [&](auto rows) { dotprod_tile<decltype(rows)::value, Stored::kQ8>(t); });
}

void int8_tile_q4s_neon_dotprod(const Int8Tile& t) {
  with_tile_rows<kInt8NeonDotprodXRows>(
      t.rows, [&](auto rows) { dotprod_tile<decltype(rows)::value, Stored::kQ4>(t); });
}

}  // namespace qvl::ops::kernels
