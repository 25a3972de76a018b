// Internal: the x86 elementwise kernels (ops/elementwise_kernels.h).
#pragma once

#include <cstdint>

#include "ops/elementwise_kernels.h"

namespace qvl::ops::elementwise_kernels {

// Vector kernels over any n (tails masked). gelu_tanh uses 0.5 (1 + tanh(u)) = 1 / (1 + e^-2u).
void silu_mul_avx512(const float* gate, const float* up, int64_t n, float* out);
void gelu_tanh_avx512(float* x, int64_t n);
void silu_mul_avx2(const float* gate, const float* up, int64_t n, float* out);
void gelu_tanh_avx2(float* x, int64_t n);

// One row of the norms; sums in double like the references.
void rms_norm_row_avx512(const float* x, const float* weight, float eps, int64_t n, float* y);
void layer_norm_row_avx512(const float* x, const float* weight, const float* bias, float eps,
                           int64_t n, float* y);
void rms_norm_row_avx2(const float* x, const float* weight, float eps, int64_t n, float* y);
void layer_norm_row_avx2(const float* x, const float* weight, const float* bias, float eps,
                         int64_t n, float* y);

ExpSum exp_sum_avx512(const float* x, int64_t n);
ExpSum exp_sum_avx2(const float* x, int64_t n);

}  // namespace qvl::ops::elementwise_kernels
