// Internal pieces of the activations and norms: scalar oracles and per-ISA row kernels.
#pragma once

#include <cstdint>

#include "ops/packed_matrix.h"
#include "ops/softmax_stats.h"

namespace qvl::ops::elementwise_kernels {

// Whether the kernels of `isa` passed a one-time check against the references on this CPU
// (computed on first use; only call for levels the CPU runs). usable_isa() is active_isa(),
// lowered past levels that failed (logged as an error).
bool kernels_verified(IsaLevel isa);
IsaLevel usable_isa();

// The scalar versions (the oracles for tests).
void silu_mul_reference(const float* gate, const float* up, int64_t n, float* out);
void gelu_tanh_reference(float* x, int64_t n);
void gelu_erf_reference(float* x, int64_t n);
void rms_norm_reference(const float* x, const float* weight, float eps, int64_t rows, int64_t n,
                        float* y);
void layer_norm_reference(const float* x, const float* weight, const float* bias, float eps,
                          int64_t rows, int64_t n, float* y);

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

// Softmax statistics of a row (softmax_stats.h): exponentials in float, sums in double.
ExpSum exp_sum_reference(const float* x, int64_t n);
ExpSum exp_sum_avx512(const float* x, int64_t n);
ExpSum exp_sum_avx2(const float* x, int64_t n);

}  // namespace qvl::ops::elementwise_kernels
