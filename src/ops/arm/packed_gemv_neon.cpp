// Whole-row GEMV and small-batch run kernels in baseline ARMv8.0 NEON (see GroupRun in
// packed_kernels.h), for every ARM level.
//
// Each kernel is a template over G groups x X rows of x whose step for one (x row, group) pair is
// the same for every G and X, so a row's bits do not depend on the batch (count, nx) it is in.
//   bf16: x fp32 (Bf16RunX::kF32). One float32x4 accumulator per (x row, weight row); 4 columns at
//   a time, the bf16 widened to fp32 by USHLL #16 and fused into it (FMLA) in column order, lane
//   l taking columns = l mod 4; at the end of the row FADDP reduces 4 rows at once. One USHLL per
//   weight vector: the GEMV (each weight meets one x row) is bound to half the FMLA rate by the
//   two vector pipes (N1), ~8 bytes of bf16 per cycle, above a core's share of DRAM bandwidth.
//   q8 / q4: per block the exact int32 dot of each row (SMULL/SMLAL2 pairs, at most 2 * 127 * 128
//   in an int16 lane, then SADALP), then the scalar oracle's fp32 steps in its order,
//   acc += float(dot) * (w_scale * x_scale), rounding each (the build has -ffp-contract=off): the
//   same bits as q8_run_scalar / q4_run_scalar.
#include <arm_neon.h>

#include "ops/arm/int8_gemm_neon.h"
#include "ops/arm/packed_gemm_neon.h"
#include "ops/packed_gemv_shapes.h"
#include "ops/packed_kernels.h"

namespace qvl::ops::kernels {
namespace {

// Weight prefetch distance: the same block of the groups the next call reads (G groups on), as on
// x86 (measured there; no ARM hardware to tune it on).
template <int G>
int64_t ahead_bytes(const GroupRun& w) {
  return G * w.group_bytes;
}

// [sum(a0), sum(a1), sum(a2), sum(a3)], each as ((l0 + l1) + (l2 + l3)).
inline float32x4_t reduce4(float32x4_t a0, float32x4_t a1, float32x4_t a2, float32x4_t a3) {
  return vpaddq_f32(vpaddq_f32(a0, a1), vpaddq_f32(a2, a3));
}

// noinline: each shape keeps its own symbol (scripts/arm_mca_loops.py finds its loop by name);
// one call per run of whole rows costs nothing.
template <int G, int X>
[[gnu::noinline]] void bf16_rows(const GroupRun& w, const float* x, size_t stride, float* out) {
  const int64_t distance = ahead_bytes<G>(w);
  float32x4_t acc[X][G][kRows];
#pragma GCC unroll 4
  for (int i = 0; i < X; ++i) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) acc[i][g][r] = vdupq_n_f32(0);
    }
  }
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint16_t* tile[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const uint8_t* t = w.first + g * w.group_bytes + w.scale_bytes + b * kBf16TileBytes;
      for (int64_t line = 0; line < kBf16TileBytes; line += 64) {
        __builtin_prefetch(t + distance + line);
      }
      tile[g] = reinterpret_cast<const uint16_t*>(t);
    }
    for (int c = 0; c < kCols / 4; ++c) {
      float32x4_t xv[X];
#pragma GCC unroll 4
      for (int i = 0; i < X; ++i) xv[i] = vld1q_f32(x + i * stride + b * kCols + 4 * c);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
          const float32x4_t wv =
              vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(tile[g] + r * kCols + 4 * c), 16));
#pragma GCC unroll 4
          for (int i = 0; i < X; ++i) acc[i][g][r] = vfmaq_f32(acc[i][g][r], wv, xv[i]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < X; ++i) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      vst1q_f32(out + (i * G + g) * kRows,
                reduce4(acc[i][g][0], acc[i][g][1], acc[i][g][2], acc[i][g][3]));
    }
  }
}

// The exact dot of 32 int8 weights (w0: columns 0..15, w1: 16..31) with 32 x values, as 4 int32
// partial sums. Each int16 lane adds two products of at most 128 * 127.
inline int32x4_t dot32(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
  int16x8_t p0 = vmull_s8(vget_low_s8(w0), vget_low_s8(x0));
  p0 = vmlal_high_s8(p0, w0, x0);
  int16x8_t p1 = vmull_s8(vget_low_s8(w1), vget_low_s8(x1));
  p1 = vmlal_high_s8(p1, w1, x1);
  return vpadalq_s16(vpaddlq_s16(p0), p1);
}

// A group's 4 rows of block b as int8 columns 0..15 (w[r][0]) and 16..31 (w[r][1]).
template <bool kQ4>
inline void load_quant_rows(const uint8_t* data, int64_t b, int8x16_t w[kRows][2]) {
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    if constexpr (kQ4) {  // byte j = column j (low nibble) and j + 16 (high nibble), each q + 8
      const uint8x16_t packed = vld1q_u8(data + b * kQ4TileBytes + r * (kCols / 2));
      const int8x16_t eight = vdupq_n_s8(8);
      w[r][0] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(packed, vdupq_n_u8(0x0f))), eight);
      w[r][1] = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(packed, 4)), eight);
    } else {
      const auto* src = reinterpret_cast<const int8_t*>(data + b * kQ8TileBytes + r * kCols);
      w[r][0] = vld1q_s8(src);
      w[r][1] = vld1q_s8(src + 16);
    }
  }
}

template <bool kQ4, int G, int X>
void quant_rows(const GroupRun& w, const QuantX& x, float* out) {
  const int64_t distance = ahead_bytes<G>(w);
  const int64_t tile_bytes = kQ4 ? kQ4TileBytes : kQ8TileBytes;
  float32x4_t acc[X][G];
#pragma GCC unroll 4
  for (int i = 0; i < X; ++i) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[i][g] = vdupq_n_f32(0);
  }
  for (int64_t b = 0; b < w.nb; ++b) {
    int8x16_t wq[G][kRows][2];
    float32x4_t ws[G];  // the 4 rows' block scales
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const uint8_t* group = w.first + g * w.group_bytes;
      const uint8_t* data = group + w.scale_bytes;
      for (int64_t line = 0; line < tile_bytes; line += 64) {
        __builtin_prefetch(data + b * tile_bytes + distance + line);
      }
      ws[g] = vcvt_f32_f16(vreinterpret_f16_u16(
          vld1_u16(reinterpret_cast<const uint16_t*>(group + b * kScaleBytes))));
      load_quant_rows<kQ4>(data, b, wq[g]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < X; ++i) {
      const int64_t xb = i * x.stride_blocks + b;
      const int8x16_t x0 = vld1q_s8(x.q + xb * kCols), x1 = vld1q_s8(x.q + xb * kCols + 16);
      const float xs = x.scale[xb];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        const int32x4_t d0 = dot32(wq[g][0][0], wq[g][0][1], x0, x1);
        const int32x4_t d1 = dot32(wq[g][1][0], wq[g][1][1], x0, x1);
        const int32x4_t d2 = dot32(wq[g][2][0], wq[g][2][1], x0, x1);
        const int32x4_t d3 = dot32(wq[g][3][0], wq[g][3][1], x0, x1);
        const int32x4_t dots = vpaddq_s32(vpaddq_s32(d0, d1), vpaddq_s32(d2, d3));
        acc[i][g] = vaddq_f32(acc[i][g], vmulq_f32(vcvtq_f32_s32(dots), vmulq_n_f32(ws[g], xs)));
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < X; ++i) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) vst1q_f32(out + (i * G + g) * kRows, acc[i][g]);
  }
}

template <bool kQ4>
void quant_run(const GroupRun& w, const QuantX& x, int nx, float* out) {
  // Batches: one group (8 weight registers) against up to 4 x rows; the GEMV up to 4 groups.
  for_run_shapes<4, 4, 1>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    quant_rows<kQ4, G, X>(part, quant_rows_from(x, i0), o);
  });
}

}  // namespace

void bf16_run_neon(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out) {
  const auto* xf = static_cast<const float*>(x);
  const size_t stride = x_stride / sizeof(float);
  // The GEMV: 4 groups (16 accumulators); batches: 1 group x 4 x rows (16). Each widened weight
  // serves X rows, so X sets the USHLL share; 2 groups x 3 rows (24 accumulators) spilled.
  for_run_shapes<4, 4, 1>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    bf16_rows<G, X>(part, xf + i0 * stride, stride, o);
  });
}

void q8_run_neon(const GroupRun& w, const QuantX& x, int nx, float* out) {
  quant_run<false>(w, x, nx, out);
}

void q4_run_neon(const GroupRun& w, const QuantX& x, int nx, float* out) {
  quant_run<true>(w, x, nx, out);
}

void quantize_row_neon(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum) {
  quantize_row_to_neon(x, nb, 127, q, scale, sum);
}

}  // namespace qvl::ops::kernels
