// y[m, w.rows] = x[m, w.cols] * w^T (+ bias): the linear layer of every model op.
#pragma once

#include <cstdint>

#include "ops/weight_ref.h"

namespace qvl::ops {

// Exact mode: fp32 math on the stored weights (converted exactly to fp32). bias may be null.
// Rows of x and y are contiguous with strides w.cols and w.rows.
void matmul(const float* x, int64_t m, const WeightRef& w, const float* bias, float* y);

// Dot product with a fixed summation order (8 partial sums), used as the reference reduction.
float dot_f32(const float* a, const float* b, int64_t n);

}  // namespace qvl::ops
