// Vector math for the NEON kernels (aarch64: ASIMD is baseline, so no target attributes needed).
#pragma once

#include <arm_neon.h>

#include "ops/exp2_polynomial.h"

namespace qvl::ops::neon {

// e^x for x already clamped to [-127 ln2, 128 ln2]: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite
// split of ln2 with FMA), e^r by a degree-6 polynomial fitted at Chebyshev nodes (relative error
// 2e-8), times 2^n written into the exponent bits. n lies in [-127, 128], whose exponent fields 0
// and 255 are exactly 0.0f and +inf: underflow and overflow need no compares or selects. NaN
// converts to n = 0 and stays NaN through the polynomial.
inline float32x4_t exp_clamped(float32x4_t x) {
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));  // n * 0.693359375 is exact
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(0x1.6d7532p-10f);
  p = vfmaq_f32(vdupq_n_f32(0x1.126fa6p-7f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0x1.5554acp-5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0x1.555404p-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(p, vreinterpretq_f32_s32(bits));
}

inline constexpr float kExpLow = -88.0296919f;  // -127 ln2: e^x is 0 at and below
inline constexpr float kExpHigh = 88.7228391f;  // 128 ln2: e^x is +inf at and above

// e^x: +inf above ~88.38 (true overflow 88.72), 0 below ~-87.68 (no results below 2^-126), NaN
// stays NaN (FMIN and FMAX propagate it).
inline float32x4_t exp(float32x4_t x) {
  return exp_clamped(vminq_f32(vmaxq_f32(x, vdupq_n_f32(kExpLow)), vdupq_n_f32(kExpHigh)));
}

// e^x for x <= 0 (softmax terms x - max), with NaN giving 0: FMAXNM returns the clamp for a NaN
// operand, like the references' reading of NaN as -inf.
inline float32x4_t exp_nonpositive(float32x4_t x) {
  return exp_clamped(vmaxnmq_f32(x, vdupq_n_f32(kExpLow)));
}

// 2^x for softmax arguments (x <= 0, as x - max): x = n + r with |r| <= 1/2, 2^r by the shared
// kExp2Polynomial (relative error ~1.5e-7), times 2^n in the exponent bits. FMAXNM turns NaN into
// the clamp -127, whose 2^n is exactly 0: NaN and -inf terms vanish, like the references' NaN as
// -inf. Results below 2^-126 are 0.
inline float32x4_t exp2_nonpositive(float32x4_t x) {
  const float32x4_t xc = vmaxnmq_f32(x, vdupq_n_f32(-127.0f));
  const float32x4_t n = vrndnq_f32(xc);
  const float32x4_t r = vsubq_f32(xc, n);
  float32x4_t p = vdupq_n_f32(kExp2Polynomial[0]);
  for (int i = 1; i < 7; ++i) p = vfmaq_f32(vdupq_n_f32(kExp2Polynomial[i]), p, r);
  const int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(p, vreinterpretq_f32_s32(bits));
}

// Lanes [0, count) of p with `fill` in the others (count < 4): tails never touch memory past n.
inline float32x4_t load_partial(const float* p, int64_t count, float fill) {
  float lanes[4] = {fill, fill, fill, fill};
  for (int64_t j = 0; j < count; ++j) lanes[j] = p[j];
  return vld1q_f32(lanes);
}

inline void store_partial(float* p, int64_t count, float32x4_t v) {
  float lanes[4];
  vst1q_f32(lanes, v);
  for (int64_t j = 0; j < count; ++j) p[j] = lanes[j];
}

}  // namespace qvl::ops::neon
