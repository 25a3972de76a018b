// The USMMLA loop of the machine probe (machine_probe_neon.h). -march=armv8.2-a+dotprod+i8mm.
#include <arm_neon.h>

#include "ops/arm/machine_probe_neon.h"

#define QVL_OPAQUE(v) asm volatile("" : "+w"(v))

namespace qvl::ops::probe_kernels {

int32_t int8_dot_loop_i8mm(int64_t iters, uint8_t u, int8_t s) {
  // USMMLA: a 2 x 8 unsigned by 8 x 2 signed block into a 2 x 2 int32 tile, 32 multiply-adds
  // (the int8 GEMM's i8mm tile). 12 chains, as for SDOT.
  constexpr int kAcc = 12;
  const uint8x16_t vu = vdupq_n_u8(u);
  const int8x16_t vs = vdupq_n_s8(s);
  int32x4_t acc[kAcc];
#pragma GCC unroll 12
  for (auto& x : acc) {
    x = vdupq_n_s32(0);
    QVL_OPAQUE(x);
  }
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (auto& x : acc) x = vusmmlaq_s32(x, vu, vs);
  }
  int32x4_t m = acc[0];
#pragma GCC unroll 12
  for (const auto& x : acc) m = vminq_s32(m, x);
  // Each lane holds 8 products per iteration; the probe's loops count 4.
  return vminvq_s32(m) / 2;
}

}  // namespace qvl::ops::probe_kernels
