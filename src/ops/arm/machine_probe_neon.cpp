// Baseline NEON loops of the machine probe (machine_probe_neon.h).
#include "ops/arm/machine_probe_neon.h"

#include <arm_neon.h>

// An empty asm that "changes" v: the compiler can neither merge equal accumulators nor hoist
// loop-invariant products, and no instruction is emitted.
#define QVL_OPAQUE(v) asm volatile("" : "+w"(v))

namespace qvl::ops::probe_kernels {

float fma_loop_neon(int64_t iters, float a, float b) {
  // 16 chains: 4 FMLA pipes (Neoverse-V1/V2, Apple) x 4 cycles of latency; 2 pipes on A76/N1.
  constexpr int kAcc = 16;
  const float32x4_t va = vdupq_n_f32(a), vb = vdupq_n_f32(b);
  float32x4_t acc[kAcc];
#pragma GCC unroll 16
  for (auto& x : acc) {
    x = vdupq_n_f32(0.0f);
    QVL_OPAQUE(x);
  }
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (auto& x : acc) x = vfmaq_f32(vb, x, va);
  }
  float32x4_t m = acc[0];
#pragma GCC unroll 16
  for (const auto& x : acc) m = vminq_f32(m, x);
  return vminvq_f32(m);
}

int32_t int8_dot_loop_neon(int64_t iters, uint8_t u, int8_t s) {
  // What an ARMv8.0 core without SDOT does per 16 byte products: SMULL (8 products to int16),
  // SMLAL2 (the other 8 added to them) and SADALP (pairs of int16 added into int32 lanes).
  constexpr int kAcc = 8;
  const int8x16_t vs = vdupq_n_s8(s);
  int8x16_t vu[kAcc];
  int32x4_t acc[kAcc];
#pragma GCC unroll 8
  for (int k = 0; k < kAcc; ++k) {
    vu[k] = vdupq_n_s8(static_cast<int8_t>(u));
    acc[k] = vdupq_n_s32(0);
    QVL_OPAQUE(acc[k]);
  }
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 8
    for (int k = 0; k < kAcc; ++k) {
      QVL_OPAQUE(vu[k]);  // a fresh operand each time: no product is hoisted
      const int16x8_t pairs =
          vmlal_high_s8(vmull_s8(vget_low_s8(vu[k]), vget_low_s8(vs)), vu[k], vs);
      acc[k] = vpadalq_s16(acc[k], pairs);
    }
  }
  int32x4_t m = acc[0];
#pragma GCC unroll 8
  for (const auto& x : acc) m = vminq_s32(m, x);
  return vminvq_s32(m);
}

uint64_t read_sum_neon(const uint8_t* p, size_t bytes) {
  uint64x2_t s0 = vdupq_n_u64(0), s1 = s0, s2 = s0, s3 = s0;
  const auto* w = reinterpret_cast<const uint64_t*>(p);
  size_t i = 0;
  for (; i + 128 <= bytes; i += 128, w += 16) {
    // LD1 of four q registers: one instruction per 64 bytes.
    const uint64x2x4_t a = vld1q_u64_x4(w), b = vld1q_u64_x4(w + 8);
    s0 = vaddq_u64(s0, vaddq_u64(a.val[0], b.val[0]));
    s1 = vaddq_u64(s1, vaddq_u64(a.val[1], b.val[1]));
    s2 = vaddq_u64(s2, vaddq_u64(a.val[2], b.val[2]));
    s3 = vaddq_u64(s3, vaddq_u64(a.val[3], b.val[3]));
  }
  for (; i < bytes; i += 64, w += 8) {
    const uint64x2x4_t a = vld1q_u64_x4(w);
    s0 = vaddq_u64(s0, a.val[0]);
    s1 = vaddq_u64(s1, a.val[1]);
    s2 = vaddq_u64(s2, a.val[2]);
    s3 = vaddq_u64(s3, a.val[3]);
  }
  const uint64x2_t s = vaddq_u64(vaddq_u64(s0, s1), vaddq_u64(s2, s3));
  return vgetq_lane_u64(s, 0) + vgetq_lane_u64(s, 1);
}

}  // namespace qvl::ops::probe_kernels
