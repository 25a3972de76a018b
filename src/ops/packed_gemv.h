// Internal: the GEMV / small-batch driver of ops::matmul on PackedMatrix (m < kGemmMinRows on the
// SIMD levels, any m on kScalar), for one matrix or several sharing the same input.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/packed_matrix.h"

namespace qvl::ops::detail {

// x [m, k] is prepared once (int8 blocks for q8/q4, reordered or bf16 rows for bf16) and every
// matrix's groups of 4 weight rows are split over the pool in ONE parallel region. All matrices
// must have the same type (not kExact) and cols. A row's results do not depend on m, on which other
// matrices share the call or on how the work is split.
void small_batch_matmul(IsaLevel isa, const float* x, int64_t m, const MatmulOutput* outputs,
                        size_t count);

// For the start-up self-check: every run shape of isa's kernels against the scalar ones on w
// (>= 16 rows; its first 4 groups) and up to 3 rows of x [.., w.cols()].
bool run_kernels_agree_with_scalar(IsaLevel isa, const float* x, const PackedMatrix& w);

}  // namespace qvl::ops::detail
