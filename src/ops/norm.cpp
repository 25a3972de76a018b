#include "ops/norm.h"

#include <cmath>

namespace qvl::ops {

void rms_norm(const float* x, const float* weight, float eps, int64_t rows, int64_t n, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double sum_sq = 0;  // double: the sum is the only place where order could cost precision
    for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(xr[i]) * xr[i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(sum_sq / n) + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = weight[i] * (xr[i] * inv);
  }
}

void layer_norm(const float* x, const float* weight, const float* bias, float eps, int64_t rows,
                int64_t n, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += xr[i];
    const double mean = sum / n;
    double var = 0;
    for (int64_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(var / n + eps));
    const float mean_f = static_cast<float>(mean);
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean_f) * inv * weight[i] + bias[i];
  }
}

}  // namespace qvl::ops
