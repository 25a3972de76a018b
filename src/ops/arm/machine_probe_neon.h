// Internal: the aarch64 loops of the machine probe (ops/machine_probe_kernels.h), one file per
// extension (baseline NEON, +dotprod, +i8mm, +bf16) so that each is compiled for its own -march.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl::ops::probe_kernels {

// Multiply-adds per iteration of each loop (one multiply-add counts as 2 operations).
inline constexpr int64_t kFmaNeonPerIter = 16 * 4;       // 16 q-register accumulators, FMLA .4s
inline constexpr int64_t kInt8NeonPerIter = 8 * 16;      // 8: SMULL + SMLAL2 + SADALP per 16 bytes
inline constexpr int64_t kInt8DotprodPerIter = 12 * 16;  // 12 accumulators, SDOT
inline constexpr int64_t kInt8I8mmPerIter = 12 * 32;     // 12 accumulators, USMMLA
inline constexpr int64_t kBf16BfmmlaPerIter = 12 * 16;   // 12 accumulators, BFMMLA

// acc = acc * a + b per lane, `iters` times, from acc = 0.
float fma_loop_neon(int64_t iters, float a, float b);

// acc += 4 * u * s per int32 lane (4 byte products each), `iters` times, from 0.
// The NEON loop adds 2 products in int16 before SADALP widens them (as vpmaddubsw does on AVX2),
// and it and the SDOT loop take u as a signed byte: u <= 127 and 2 * u * |s| <= 32767.
// USMMLA gives each lane of its 2 x 2 tile 8 products per instruction: the i8mm loop returns
// half a lane, the scalar loop's value (any u).
int32_t int8_dot_loop_neon(int64_t iters, uint8_t u, int8_t s);
int32_t int8_dot_loop_dotprod(int64_t iters, uint8_t u, int8_t s);
int32_t int8_dot_loop_i8mm(int64_t iters, uint8_t u, int8_t s);

// acc += a * b + a * b per fp32 lane (one bf16 pair product each), `iters` times, from 0; a and
// b are rounded to bf16 (truncated) first. BFMMLA gives each lane of its 2 x 2 tile two pairs per
// instruction, rounding its sums to odd: the loop returns half a lane, the scalar loop's value
// where the sums are exact.
float bf16_dot_loop_bfmmla(int64_t iters, float a, float b);

// Wrapping sum of the 64-bit words of p[0, bytes): a streaming read. p 64-byte aligned, bytes a
// multiple of 64.
uint64_t read_sum_neon(const uint8_t* p, size_t bytes);

}  // namespace qvl::ops::probe_kernels
