// quantize_row_to_scalar in NEON, the same bits (see int8_gemm_neon.h). Baseline armv8-a.
// The scalar steps map to one instruction each with the same IEEE result: fabs/fmax to
// FABS/FMAXNM (both skip a NaN, and a maximum does not depend on the order it is taken in),
// nearbyint to FRINTI (the current rounding mode, no inexact), fmax/fmin to FMAXNM/FMINNM (a NaN
// product becomes -qmax as in the scalar code), the divisions stay scalar.
#include <arm_neon.h>

#include "ops/arm/int8_gemm_neon.h"

// x * inv and the clamps are separate roundings in the scalar code too.
#pragma GCC optimize("fp-contract=off")

namespace qvl::ops::kernels {

void quantize_row_to_neon(const float* x, int64_t nb, int32_t qmax, int8_t* q, float* scale,
                          int32_t* sum) {
  const auto top = static_cast<float>(qmax);
  const float32x4_t hi = vdupq_n_f32(top), lo = vdupq_n_f32(-top);
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * 32;
    float32x4_t v[8];
    for (int j = 0; j < 8; ++j) v[j] = vld1q_f32(xb + 4 * j);
    float32x4_t m0 = vmaxnmq_f32(vabsq_f32(v[0]), vabsq_f32(v[1]));
    float32x4_t m1 = vmaxnmq_f32(vabsq_f32(v[2]), vabsq_f32(v[3]));
    float32x4_t m2 = vmaxnmq_f32(vabsq_f32(v[4]), vabsq_f32(v[5]));
    float32x4_t m3 = vmaxnmq_f32(vabsq_f32(v[6]), vabsq_f32(v[7]));
    m0 = vmaxnmq_f32(vmaxnmq_f32(m0, m1), vmaxnmq_f32(m2, m3));
    // The scalar maximum starts at 0: all-NaN lanes end there too.
    const float amax = vmaxnmvq_f32(vmaxnmq_f32(m0, vdupq_n_f32(0.0f)));
    const float inv = amax > 0 ? top / amax : 0.0f;
    int32x4_t total = vdupq_n_s32(0);
    int16x8_t q16[4];
    for (int j = 0; j < 4; ++j) {
      int32x4_t r[2];
      for (int h = 0; h < 2; ++h) {
        const float32x4_t rounded = vrndiq_f32(vmulq_n_f32(v[2 * j + h], inv));
        r[h] = vcvtq_s32_f32(vminnmq_f32(vmaxnmq_f32(rounded, lo), hi));
        total = vaddq_s32(total, r[h]);
      }
      q16[j] = vcombine_s16(vmovn_s32(r[0]), vmovn_s32(r[1]));
    }
    vst1q_s8(q + b * 32, vcombine_s8(vmovn_s16(q16[0]), vmovn_s16(q16[1])));
    vst1q_s8(q + b * 32 + 16, vcombine_s8(vmovn_s16(q16[2]), vmovn_s16(q16[3])));
    scale[b] = amax / top;
    sum[b] = vaddvq_s32(total);
  }
}

}  // namespace qvl::ops::kernels
