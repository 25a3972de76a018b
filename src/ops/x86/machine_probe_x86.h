// Internal: the x86 loops of the machine probe (ops/machine_probe_kernels.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/machine_probe_kernels.h"

namespace qvl::ops::probe_kernels {

// Multiply-adds per iteration of each loop (one multiply-add counts as 2 operations).
inline constexpr int64_t kFmaAvx2PerIter = 12 * 8;      // 12 ymm accumulators, vfmadd231ps
inline constexpr int64_t kFmaAvx512PerIter = 16 * 16;   // 16 zmm accumulators
inline constexpr int64_t kBf16Avx512PerIter = 16 * 32;  // 16 zmm accumulators, vdpbf16ps
inline constexpr int64_t kInt8Avx2PerIter = 6 * 32;     // 6 ymm: vpmaddubsw + vpmaddwd + vpaddd
inline constexpr int64_t kInt8Avx512PerIter = 16 * 64;  // 16 zmm accumulators, vpdpbusd

// acc = acc * a + b per lane, `iters` times, from acc = 0.
float fma_loop_avx2(int64_t iters, float a, float b);
float fma_loop_avx512(int64_t iters, float a, float b);

// acc += a * b + a * b per fp32 lane (one bf16 pair product each), `iters` times, from 0; a and
// b are rounded to bf16 (truncated) first.
float bf16_dot_loop_avx512(int64_t iters, float a, float b);

// acc += 4 * u * s per int32 lane (4 byte products each), `iters` times, from 0. The AVX2 loop
// forms pairs in int16 (vpmaddubsw), so 2 * u * |s| must not exceed 32767.
int32_t int8_dot_loop_avx2(int64_t iters, uint8_t u, int8_t s);
int32_t int8_dot_loop_avx512(int64_t iters, uint8_t u, int8_t s);

// Wrapping sum of the 64-bit words of p[0, bytes): a streaming read. p 64-byte aligned, bytes a
// multiple of 64.
uint64_t read_sum_avx2(const uint8_t* p, size_t bytes);
uint64_t read_sum_avx512(const uint8_t* p, size_t bytes);

}  // namespace qvl::ops::probe_kernels
