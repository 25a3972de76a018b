// The SDOT loop of the machine probe (machine_probe_neon.h). -march=armv8.2-a+dotprod.
#include <arm_neon.h>

#include "ops/arm/machine_probe_neon.h"

#define QVL_OPAQUE(v) asm volatile("" : "+w"(v))

namespace qvl::ops::probe_kernels {

int32_t int8_dot_loop_dotprod(int64_t iters, uint8_t u, int8_t s) {
  // 12 chains: SDOT has 2-3 cycles of latency on 2 (A76/N1) to 4 (V1/V2) pipes.
  constexpr int kAcc = 12;
  const int8x16_t vs = vdupq_n_s8(s), vu = vdupq_n_s8(static_cast<int8_t>(u));
  int32x4_t acc[kAcc];
#pragma GCC unroll 12
  for (auto& x : acc) {
    x = vdupq_n_s32(0);
    QVL_OPAQUE(x);
  }
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (auto& x : acc) x = vdotq_s32(x, vu, vs);
  }
  int32x4_t m = acc[0];
#pragma GCC unroll 12
  for (const auto& x : acc) m = vminq_s32(m, x);
  return vminvq_s32(m);
}

}  // namespace qvl::ops::probe_kernels
