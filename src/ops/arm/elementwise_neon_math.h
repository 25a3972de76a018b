// Vector math for the NEON kernels (aarch64: ASIMD is baseline, so no target attributes needed).
#pragma once

#include <arm_neon.h>

#include <cstdint>

namespace qvl::ops::neon {

// e^x for x already clamped to [-127 ln2, 128 ln2]: x = n ln2 + r with |r| <= ln2/2, e^r by a
// degree-6 polynomial fitted at Chebyshev nodes (relative error 2e-8), times 2^n written into the
// exponent bits. n = round(x log2e) by adding 1.5 * 2^23 + 127: the sum's low mantissa bits are
// then n + 127, the biased exponent (in [0, 255], whose 0 and 255 are exactly 0.0f and +inf, so
// underflow and overflow need no compares or selects). ln2 is split (Cody-Waite) so that r is
// exact to float rounding; the polynomial runs by Estrin's scheme (c0 = c1 = 1 make its low pair
// a plain add), half the register copies and latency of Horner's with NEON's destructive FMLA.
// NaN stays NaN (through r, whatever its scale).
inline float32x4_t exp_clamped(float32x4_t x) {
  const float32x4_t shifter = vdupq_n_f32(0x1.8p23f + 127.0f);
  const float32x4_t biased = vaddq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)), shifter);
  const float32x4_t n = vsubq_f32(biased, shifter);
  const float32x4_t scale = vreinterpretq_f32_s32(vshlq_n_s32(vreinterpretq_s32_f32(biased), 23));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));  // n * 0.693359375 is exact
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  const float32x4_t r2 = vmulq_f32(r, r);
  const float32x4_t p01 = vaddq_f32(vdupq_n_f32(1.0f), r);
  const float32x4_t p23 = vfmaq_f32(vdupq_n_f32(0.5f), vdupq_n_f32(0x1.555404p-3f), r);
  const float32x4_t p45 = vfmaq_f32(vdupq_n_f32(0x1.5554acp-5f), vdupq_n_f32(0x1.126fa6p-7f), r);
  const float32x4_t p46 = vfmaq_f32(p45, vdupq_n_f32(0x1.6d7532p-10f), r2);
  const float32x4_t p26 = vfmaq_f32(p23, p46, r2);
  return vmulq_f32(vfmaq_f32(p01, p26, r2), scale);
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
