// The BFMMLA loop of the machine probe (machine_probe_neon.h): the peak of the i8mm level's bf16
// GEMM. Compiled with +bf16 (the _bf16 file rule in cmake/QvlArch.cmake).
#include <arm_neon.h>

#include <cstring>

#include "ops/arm/machine_probe_neon.h"

#define QVL_OPAQUE(v) asm volatile("" : "+w"(v))

namespace qvl::ops::probe_kernels {
namespace {

bfloat16x8_t splat_truncated_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return vreinterpretq_bf16_u16(vdupq_n_u16(static_cast<uint16_t>(u >> 16)));
}

}  // namespace

float bf16_dot_loop_bfmmla(int64_t iters, float a, float b) {
  // BFMMLA: a 2 x 4 by 4 x 2 bf16 block into a 2 x 2 fp32 tile, 16 multiply-adds (the bf16
  // GEMM's tile). 12 chains, as for USMMLA.
  constexpr int kAcc = 12;
  const bfloat16x8_t va = splat_truncated_bf16(a), vb = splat_truncated_bf16(b);
  float32x4_t acc[kAcc];
#pragma GCC unroll 12
  for (auto& x : acc) {
    x = vdupq_n_f32(0);
    QVL_OPAQUE(x);
  }
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (auto& x : acc) x = vbfmmlaq_f32(x, va, vb);
  }
  float32x4_t m = acc[0];
#pragma GCC unroll 12
  for (const auto& x : acc) m = vminq_f32(m, x);
  // Each lane gets 4 products per instruction, two pairs; the probe's loops count one pair.
  return vminvq_f32(m) / 2;
}

}  // namespace qvl::ops::probe_kernels
