// Normalisations over the last dimension of row-major [rows, n] arrays (in place allowed).
#pragma once

#include <cstdint>

namespace qvl::ops {

// y = x / sqrt(mean(x^2) + eps) * weight   (Qwen3 RMSNorm: weight multiplies, no offset).
void rms_norm(const float* x, const float* weight, float eps, int64_t rows, int64_t n, float* y);

// y = (x - mean) / sqrt(var + eps) * weight + bias   (biased variance, as torch LayerNorm).
void layer_norm(const float* x, const float* weight, const float* bias, float eps, int64_t rows,
                int64_t n, float* y);

}  // namespace qvl::ops
