// Internal: the per-ISA loops of the machine probe (machine_probe.h). Compute loops keep all data
// in registers with enough independent accumulators to fill the pipelines; each returns the value
// one accumulator lane ends with (all lanes start at 0 and do the same work), so tests can compare
// every level with the scalar loop exactly. Only plain declarations here (see packed_kernels.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/isa.h"

namespace qvl::ops::probe_kernels {

// Multiply-adds per iteration of the scalar loops (one multiply-add counts as 2 operations).
inline constexpr int64_t kFmaScalarPerIter = 8;   // 8 float accumulators
inline constexpr int64_t kInt8ScalarPerIter = 4;  // 4 int32 multiplies

// fma_loop: acc = acc * a + b per lane, `iters` times, from acc = 0.
// bf16_dot_loop: acc += a * b + a * b per fp32 lane (one bf16 pair product each), `iters` times,
// from 0; a and b are rounded to bf16 (truncated) first.
// int8_dot_loop: acc += 4 * u * s per int32 lane (4 byte products each), `iters` times, from 0
// (loops that form pairs in int16 need 2 * u * |s| <= 32767).
// read_sum: wrapping sum of the 64-bit words of p[0, bytes): a streaming read. p 64-byte
// aligned, bytes a multiple of 64.
float fma_loop_scalar(int64_t iters, float a, float b);
float bf16_dot_loop_scalar(int64_t iters, float a, float b);
int32_t int8_dot_loop_scalar(int64_t iters, uint8_t u, int8_t s);
uint64_t read_sum_scalar(const uint8_t* p, size_t bytes);

// The loops of a level, their operations per iteration and the instruction each times (for the
// report). bf16_dot_loop is null where the level has no bf16 dot product.
struct ProbeKernels {
  float (*fma_loop)(int64_t iters, float a, float b);
  int64_t fma_per_iter;
  const char* fp32_instruction;
  float (*bf16_dot_loop)(int64_t iters, float a, float b);
  int64_t bf16_per_iter;
  const char* bf16_instruction;
  int32_t (*int8_dot_loop)(int64_t iters, uint8_t u, int8_t s);
  int64_t int8_per_iter;
  const char* int8_instruction;
  uint64_t (*read_sum)(const uint8_t* p, size_t bytes);
};
// The loops of `isa`, or null where the level has none (the scalar ones run). Per architecture:
// src/ops/<arch>/kernel_registry.cpp.
const ProbeKernels* probe_kernels_for(IsaLevel isa);

}  // namespace qvl::ops::probe_kernels
