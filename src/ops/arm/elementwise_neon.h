// NEON (aarch64 ASIMD) activations, norm rows and softmax statistics: the same contracts as the
// AVX2 kernels of ops/elementwise_kernels.h, over any n (tails never read or write past n).
#pragma once

#include <cstdint>

#include "ops/softmax_stats.h"

namespace qvl::ops::elementwise_kernels {

// gelu_tanh uses 0.5 (1 + tanh(u)) = 1 / (1 + e^-2u), like the x86 kernels.
void silu_mul_neon(const float* gate, const float* up, int64_t n, float* out);
void gelu_tanh_neon(float* x, int64_t n);

// One row of the norms; sums in double like the references.
void rms_norm_row_neon(const float* x, const float* weight, float eps, int64_t n, float* y);
void layer_norm_row_neon(const float* x, const float* weight, const float* bias, float eps,
                         int64_t n, float* y);

// Exponentials in float, sums in double (softmax_stats.h).
ExpSum exp_sum_neon(const float* x, int64_t n);

}  // namespace qvl::ops::elementwise_kernels
