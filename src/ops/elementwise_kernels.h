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

// Softmax statistics of a row (softmax_stats.h): exponentials in float, sums in double.
ExpSum exp_sum_reference(const float* x, int64_t n);

// The vector kernels of a level: silu_mul and gelu_tanh over any n, one row of the norms (sums in
// double like the references), and the softmax statistics of a row (exponentials in float, sums
// in double).
struct ElementwiseKernels {
  void (*silu_mul)(const float* gate, const float* up, int64_t n, float* out);
  void (*gelu_tanh)(float* x, int64_t n);
  void (*rms_norm_row)(const float* x, const float* weight, float eps, int64_t n, float* y);
  void (*layer_norm_row)(const float* x, const float* weight, const float* bias, float eps,
                         int64_t n, float* y);
  ExpSum (*exp_sum)(const float* x, int64_t n);
};
// The kernels of `isa` (a level this CPU runs), or null where the level has none (the references
// run). Per architecture: src/ops/<arch>/kernel_registry.cpp.
const ElementwiseKernels* elementwise_kernels_for(IsaLevel isa);
// The kernels of usable_isa(), or null for the references.
const ElementwiseKernels* usable_kernels();

}  // namespace qvl::ops::elementwise_kernels
