// Internal: the x86 kernel sets of the blocked GEMM (ops/packed_gemm.h).
#pragma once

#include <cstdint>

#include "ops/packed_gemm.h"

namespace qvl::ops::kernels {

extern const GemmKernels kGemmF32Avx2;
extern const GemmKernels kGemmF32Avx512;
extern const GemmKernels kGemmBf16Avx512;  // GemmType::kBF16 weights only

// The strip packers of the sets use AVX2 (every CPU with an AVX-512 level has it), 8x8
// transposes of 32-bit words.
void pack_strips_f32_avx2(const GemmProblem& p, int64_t r0, int64_t strips, int strip_rows,
                          int64_t k0, int64_t depth, void* out);
void pack_strips_bf16_pairs_avx2(const GemmProblem& p, int64_t r0, int64_t strips, int strip_rows,
                                 int64_t k0, int64_t depth, void* out);

}  // namespace qvl::ops::kernels
