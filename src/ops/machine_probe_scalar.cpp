// The scalar loops of the machine probe: the oracles of the SIMD ones, and the probe on CPUs
// without AVX2.
#include <algorithm>
#include <bit>

#include "ops/machine_probe_kernels.h"

namespace qvl::ops {

namespace probe_kernels {

// Memory operands: a register constraint for floats differs per architecture ("x", "w", "f").
#define QVL_OPAQUE_FLOAT(v) asm volatile("" : "+m"(v))
#define QVL_OPAQUE_INT(v) asm volatile("" : "+r"(v))

float fma_loop_scalar(int64_t iters, float a, float b) {
  float acc[8];
  for (auto& x : acc) {
    x = 0.0f;
    QVL_OPAQUE_FLOAT(x);
  }
  for (int64_t i = 0; i < iters; ++i) {
    for (auto& x : acc) x = x * a + b;
  }
  return *std::min_element(acc, acc + 8);
}

float bf16_dot_loop_scalar(int64_t iters, float a, float b) {
  const auto to_bf16 = [](float f) {
    return std::bit_cast<float>(std::bit_cast<uint32_t>(f) & 0xffff0000u);
  };
  const float product = to_bf16(a) * to_bf16(b);  // exact in fp32
  float acc = 0.0f;
  for (int64_t i = 0; i < iters; ++i) {
    acc += product;  // the odd pair, then the even pair, rounded in turn
    acc += product;
  }
  return acc;
}

int32_t int8_dot_loop_scalar(int64_t iters, uint8_t u, int8_t s) {
  // Each accumulator multiplies its own opaque copy of u every iteration (else the compiler
  // would sum the loop in closed form); the 4 equal products of a lane are one multiply.
  int32_t acc[4], uk[4];
  for (int k = 0; k < 4; ++k) {
    acc[k] = 0;
    uk[k] = u;
    QVL_OPAQUE_INT(acc[k]);
  }
  for (int64_t i = 0; i < iters; ++i) {
    asm volatile("" : "+r"(uk[0]), "+r"(uk[1]), "+r"(uk[2]), "+r"(uk[3]));
    for (int k = 0; k < 4; ++k) acc[k] += 4 * (uk[k] * s);
  }
  return *std::min_element(acc, acc + 4);
}

uint64_t read_sum_scalar(const uint8_t* p, size_t bytes) {
  const auto* w = reinterpret_cast<const uint64_t*>(p);
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i < bytes / 8; i += 4) {
    s0 += w[i];
    s1 += w[i + 1];
    s2 += w[i + 2];
    s3 += w[i + 3];
  }
  return s0 + s1 + s2 + s3;
}

}  // namespace probe_kernels
}  // namespace qvl::ops
