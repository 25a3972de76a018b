// Element-wise activations.
#pragma once

#include <cstdint>

namespace qvl::ops {

// SwiGLU: out[i] = silu(gate[i]) * up[i].
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
// GELU with the tanh approximation (torch "gelu_pytorch_tanh"), in place.
void gelu_tanh(float* x, int64_t n);
// Exact GELU with erf (torch nn.GELU()), in place.
void gelu_erf(float* x, int64_t n);

}  // namespace qvl::ops
