// The bf16 GEMV / small-batch run kernel of the i8mm level by BFMMLA (see GroupRun in
// packed_kernels.h), x as bf16 rows (Bf16RunX::kBf16, f32_to_bf16). Compiled for +bf16; the
// i8mm level implies BF16 (cpu_detect.cpp).
//
// Per output it does the GEMM tile's arithmetic (packed_gemm_bfmmla_neon.cpp): BFMMLA's two
// pair steps per 4 k, in k order from zero, so a row's bits are the same alone, in any small
// batch and in the GEMM (batch invariance for bf16 weights at this level).
// Operands: per 4 k, ZIP1/ZIP2 on 64-bit lanes pair weight rows 0 and 1 (and 2 and 3) of a
// group, and x rows 2p and 2p + 1; a lone x row pairs with itself (the duplicate lanes are
// dropped). Per block and group: 16 loads, 16 zips, 16 BFMMLA for 128 weights, against 32 USHLL
// and 32 FMLA in the fp32 kernel (packed_gemv_neon.cpp).
// As in packed_gemm_bfmmla_neon_bf16.cpp: GCC's scheduling before register allocation hoists the
// weight loads of all groups and spills; without it the 4-group GEMV keeps to its registers.
#pragma GCC optimize("no-schedule-insns")

#include <arm_neon.h>

#include "ops/arm/packed_gemm_neon.h"
#include "ops/packed_gemv_shapes.h"
#include "ops/packed_kernels.h"

namespace qvl::ops::kernels {
namespace {

inline bfloat16x8_t zip_lo(uint64x2_t a, uint64x2_t b) {
  return vreinterpretq_bf16_u64(vzip1q_u64(a, b));
}
inline bfloat16x8_t zip_hi(uint64x2_t a, uint64x2_t b) {
  return vreinterpretq_bf16_u64(vzip2q_u64(a, b));
}

// G groups x X rows of x (P = (X + 1) / 2 row pairs): acc[p][g][h] holds x rows 2p, 2p + 1
// against weight rows 2h, 2h + 1 of group g.
template <int G, int X>
[[gnu::noinline]] void bf16_rows_bfmmla(const GroupRun& w, const uint16_t* x, size_t stride,
                                        float* out) {
  constexpr int P = (X + 1) / 2;
  const int64_t distance = G * w.group_bytes;  // as the fp32 kernel: the next call's blocks
  float32x4_t acc[P][G][2];
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[p][g][0] = acc[p][g][1] = vdupq_n_f32(0);
  }
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint64_t* tile[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const uint8_t* t = w.first + g * w.group_bytes + w.scale_bytes + b * kBf16TileBytes;
      for (int64_t line = 0; line < kBf16TileBytes; line += 64) {
        __builtin_prefetch(t + distance + line);
      }
      tile[g] = reinterpret_cast<const uint64_t*>(t);
    }
    // 8 columns (2 k-quads) per step: one 16-byte load per row.
#pragma GCC unroll 4
    for (int h = 0; h < kCols / 8; ++h) {
      bfloat16x8_t xq[P][2];
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        const uint64x2_t x0 =
            vld1q_u64(reinterpret_cast<const uint64_t*>(x + 2 * p * stride + b * kCols + 8 * h));
        const uint64x2_t x1 = 2 * p + 1 < X ? vld1q_u64(reinterpret_cast<const uint64_t*>(
                                                  x + (2 * p + 1) * stride + b * kCols + 8 * h))
                                            : x0;
        xq[p][0] = zip_lo(x0, x1);
        xq[p][1] = zip_hi(x0, x1);
      }
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        uint64x2_t row[kRows];
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) row[r] = vld1q_u64(tile[g] + r * (kCols / 4) + 2 * h);
        const bfloat16x8_t w01[2] = {zip_lo(row[0], row[1]), zip_hi(row[0], row[1])};
        const bfloat16x8_t w23[2] = {zip_lo(row[2], row[3]), zip_hi(row[2], row[3])};
#pragma GCC unroll 2
        for (int c = 0; c < 2; ++c) {  // k-quads 2h, 2h + 1, in k order
#pragma GCC unroll 4
          for (int p = 0; p < P; ++p) {
            acc[p][g][0] = vbfmmlaq_f32(acc[p][g][0], xq[p][c], w01[c]);
            acc[p][g][1] = vbfmmlaq_f32(acc[p][g][1], xq[p][c], w23[c]);
          }
        }
      }
    }
  }
  // x row 2p: the low halves of acc[p][g][0..1], row 2p + 1 the high ones.
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const float64x2_t a = vreinterpretq_f64_f32(acc[p][g][0]);
      const float64x2_t c = vreinterpretq_f64_f32(acc[p][g][1]);
      vst1q_f32(out + (2 * p * G + g) * kRows, vreinterpretq_f32_f64(vzip1q_f64(a, c)));
      if (2 * p + 1 < X) {
        vst1q_f32(out + ((2 * p + 1) * G + g) * kRows, vreinterpretq_f32_f64(vzip2q_f64(a, c)));
      }
    }
  }
}

}  // namespace

void bf16_run_bfmmla(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out) {
  const auto* xb = static_cast<const uint16_t*>(x);
  const size_t stride = x_stride / sizeof(uint16_t);
  // The GEMV: 4 groups (8 accumulators); batches: 2 groups x 4 x rows (8).
  for_run_shapes<4, 4, 2>(w, nx, out, [&]<int G, int X>(const GroupRun& part, int i0, float* o) {
    bf16_rows_bfmmla<G, X>(part, xb + i0 * stride, stride, o);
  });
}

}  // namespace qvl::ops::kernels
