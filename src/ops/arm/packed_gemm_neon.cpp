// NEON kernel set of the blocked GEMM (driver and layouts: packed_gemm.h/.cpp), baseline
// ARMv8.0: fp32 x panels, weight strips dequantized to fp32 when packed, and a 6 x 16 register
// tile of FMLA by element.
//
// Why 6 x 16: AArch64 has 32 vector registers of 4 floats. A tile of X x rows by S weight rows
// holds X * S / 4 accumulators, S / 4 weight vectors of the current k and the x values (FMLA by
// element reads any lane, so 4 x values share one register). 6 x 16 takes 24 accumulators +
// 4 weight vectors + 2 x registers (4 + 2 values) = 30, and does 24 FMLA per 6 loads (4 weight
// vectors, 2 of x): the loads hide behind the multiplies (N1: 2 FMLA and 2 loads per cycle).
// 8 x 16 would need 32 accumulators; 12 x 8 loads as much per FMLA, but twice as much of it from
// the x panels, which stream from L2 while a strip stays in L1.
//
// Arithmetic per output: one fp32 lane, w * x fused (FMLA) in k order, stored and reloaded between
// depth blocks, then + bias (in the driver): the same bits as fma over k, whatever the batch.
#include "ops/arm/packed_gemm_neon.h"

#include <arm_neon.h>

#include "ops/packed_gemm.h"

namespace qvl::ops::kernels {
namespace {

constexpr int kTileX = 6;   // x rows per tile
constexpr int kStrip = 16;  // weight rows per strip (4 vectors)

// acc[j] += w[j] * x[Lane] for the 4 vectors of a strip row.
template <int Lane>
inline void fma_row(float32x4_t acc[4], const float32x4_t w[4], float32x4_t x) {
  acc[0] = vfmaq_laneq_f32(acc[0], w[0], x, Lane);
  acc[1] = vfmaq_laneq_f32(acc[1], w[1], x, Lane);
  acc[2] = vfmaq_laneq_f32(acc[2], w[2], x, Lane);
  acc[3] = vfmaq_laneq_f32(acc[3], w[3], x, Lane);
}

template <int Lane>
inline void fma_row_half(float32x4_t acc[4], const float32x4_t w[4], float32x2_t x) {
  acc[0] = vfmaq_lane_f32(acc[0], w[0], x, Lane);
  acc[1] = vfmaq_lane_f32(acc[1], w[1], x, Lane);
  acc[2] = vfmaq_lane_f32(acc[2], w[2], x, Lane);
  acc[3] = vfmaq_lane_f32(acc[3], w[3], x, Lane);
}

inline void load_strip_row(const float* w, float32x4_t out[4]) {
  out[0] = vld1q_f32(w);
  out[1] = vld1q_f32(w + 4);
  out[2] = vld1q_f32(w + 8);
  out[3] = vld1q_f32(w + 12);
}

void tile(const void* x_panel, const void* w_strip, int64_t depth, float* y, int64_t ldy,
          bool accumulate) {
  const auto* x = static_cast<const float*>(x_panel);
  const auto* w = static_cast<const float*>(w_strip);
  float32x4_t acc[kTileX][4];
#pragma GCC unroll 6
  for (int i = 0; i < kTileX; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j)
      acc[i][j] = accumulate ? vld1q_f32(y + i * ldy + 4 * j) : vdupq_n_f32(0);
  }
  // Per k: x rows 0..3 in one register, 4..5 in the low half of another (FMLA by element reads
  // a lane of either), 4 weight vectors: 30 registers, none left to copy through.
#pragma GCC unroll 2
  for (int64_t kk = 0; kk < depth; ++kk) {
    const float* xk = x + kk * kTileX;
    const float32x4_t x03 = vld1q_f32(xk);
    const float32x2_t x45 = vld1_f32(xk + 4);
    float32x4_t wv[4];
    load_strip_row(w + kk * kStrip, wv);
    fma_row<0>(acc[0], wv, x03);
    fma_row<1>(acc[1], wv, x03);
    fma_row<2>(acc[2], wv, x03);
    fma_row<3>(acc[3], wv, x03);
    fma_row_half<0>(acc[4], wv, x45);
    fma_row_half<1>(acc[5], wv, x45);
  }
#pragma GCC unroll 6
  for (int i = 0; i < kTileX; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) vst1q_f32(y + i * ldy + 4 * j, acc[i][j]);
  }
}

// 8 fp32 vectors (32 columns) from one int8x16 pair of q values (columns 0..15, 16..31), times
// the row's scale (exact: an 11-bit scale times an 8-bit q fits fp32's 24 bits).
inline void widen_q(int8x16_t lo, int8x16_t hi, float scale, float32x4_t out[8]) {
  const int8x16_t q[2] = {lo, hi};
  for (int h = 0; h < 2; ++h) {
    const int16x8_t a = vmovl_s8(vget_low_s8(q[h])), b = vmovl_high_s8(q[h]);
    out[4 * h + 0] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(a))), scale);
    out[4 * h + 1] = vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(a)), scale);
    out[4 * h + 2] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(b))), scale);
    out[4 * h + 3] = vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(b)), scale);
  }
}

// Block b of packed group `group` (4 weight rows): rows[r][c] = columns 4c..4c+3 of row r, fp32.
void dequantize_group(const GemmProblem& p, int64_t group, int64_t b, float32x4_t rows[4][8]) {
  const uint8_t* g = p.weights + group * p.group_bytes;
  const uint8_t* data = g + p.scale_bytes;
  if (p.type == GemmType::kBF16) {  // bf16 is the top half of fp32: widen and shift
    const auto* src = reinterpret_cast<const uint16_t*>(data + b * kBf16TileBytes);
    for (int r = 0; r < kRows; ++r) {
      for (int c = 0; c < 4; ++c) {
        const uint16x8_t h = vld1q_u16(src + r * kCols + 8 * c);
        rows[r][2 * c] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
        rows[r][2 * c + 1] = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
      }
    }
    return;
  }
  // fp16 -> fp32 (FCVTL) is exact, subnormal scales included (Linux leaves FZ16 clear).
  float scale[kRows];
  vst1q_f32(scale, vcvt_f32_f16(vreinterpret_f16_u16(
                       vld1_u16(reinterpret_cast<const uint16_t*>(g + b * kScaleBytes)))));
  for (int r = 0; r < kRows; ++r) {
    if (p.type == GemmType::kQ8) {
      const auto* src = reinterpret_cast<const int8_t*>(data + b * kQ8TileBytes + r * kCols);
      widen_q(vld1q_s8(src), vld1q_s8(src + 16), scale[r], rows[r]);
    } else {  // kQ4: byte j = column j (low nibble) and j + 16 (high nibble), each q + 8
      const uint8x16_t packed = vld1q_u8(data + b * kQ4TileBytes + r * (kCols / 2));
      const int8x16_t eight = vdupq_n_s8(8);
      const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(packed, vdupq_n_u8(0x0f))), eight);
      const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(packed, 4)), eight);
      widen_q(lo, hi, scale[r], rows[r]);
    }
  }
}

// Rows [r0, r0 + strips * strip_rows) x columns [k0, k0 + depth) into strips [depth][strip_rows].
// r0 is a multiple of kGemmRowBlock, so every 4 rows are one packed group: each block of it is
// dequantized once and transposed in 4 x 4 squares (TRN1/TRN2 on 32- then 64-bit lanes).
void pack_strips_f32_neon(const GemmProblem& p, int64_t r0, int64_t strips, int strip_rows,
                          int64_t k0, int64_t depth, void* out) {
  auto* const dst = static_cast<float*>(out);
  const int64_t groups = (p.n + kRows - 1) / kRows;
  for (int64_t r4 = 0; r4 < strips * strip_rows; r4 += kRows) {
    float* const strip = dst + (r4 / strip_rows) * depth * strip_rows + r4 % strip_rows;
    const int64_t group = (r0 + r4) / kRows;
    for (int64_t b = k0 / kCols; b < (k0 + depth) / kCols; ++b) {
      float* const o = strip + (b * kCols - k0) * strip_rows;
      if (group >= groups) {  // rows past the packed groups are zero
        for (int64_t c = 0; c < kCols; ++c) vst1q_f32(o + c * strip_rows, vdupq_n_f32(0));
        continue;
      }
      float32x4_t rows[kRows][8];
      dequantize_group(p, group, b, rows);
      for (int c = 0; c < 8; ++c) {
        const float32x4_t t0 = vtrn1q_f32(rows[0][c], rows[1][c]);
        const float32x4_t t1 = vtrn2q_f32(rows[0][c], rows[1][c]);
        const float32x4_t t2 = vtrn1q_f32(rows[2][c], rows[3][c]);
        const float32x4_t t3 = vtrn2q_f32(rows[2][c], rows[3][c]);
        const float64x2_t d0 = vreinterpretq_f64_f32(t0), d1 = vreinterpretq_f64_f32(t1);
        const float64x2_t d2 = vreinterpretq_f64_f32(t2), d3 = vreinterpretq_f64_f32(t3);
        float* oc = o + 4 * c * strip_rows;
        vst1q_f32(oc, vreinterpretq_f32_f64(vtrn1q_f64(d0, d2)));
        vst1q_f32(oc + strip_rows, vreinterpretq_f32_f64(vtrn1q_f64(d1, d3)));
        vst1q_f32(oc + 2 * strip_rows, vreinterpretq_f32_f64(vtrn2q_f64(d0, d2)));
        vst1q_f32(oc + 3 * strip_rows, vreinterpretq_f32_f64(vtrn2q_f64(d1, d3)));
      }
    }
  }
}

}  // namespace

constinit const GemmKernels kGemmF32Neon{
    "f32-neon", 4, 4, kTileX, kStrip, pack_x_panel_f32, pack_strips_f32_neon, tile};

}  // namespace qvl::ops::kernels
