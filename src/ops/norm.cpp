#include "ops/norm.h"

#include <cmath>

#include "base/thread_pool.h"
#include "ops/elementwise_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace elementwise_kernels {

void rms_norm_reference(const float* x, const float* weight, float eps, int64_t rows, int64_t n,
                        float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double sum_sq = 0;  // double: the sum is the only place where order could cost precision
    for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(xr[i]) * xr[i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(sum_sq / n) + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = weight[i] * (xr[i] * inv);
  }
}

void layer_norm_reference(const float* x, const float* weight, const float* bias, float eps,
                          int64_t rows, int64_t n, float* y) {
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

}  // namespace elementwise_kernels

namespace {

// Runs row(r) for every row, on the global pool when there is enough work to pay for it.
template <typename Fn>
void for_rows(int64_t rows, int64_t n, Fn&& row) {
  if (rows * n < 65536) {
    for (int64_t r = 0; r < rows; ++r) row(r);
    return;
  }
  ThreadPool::global().parallel_for(static_cast<size_t>(rows), [&](size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) row(static_cast<int64_t>(r));
  });
}

}  // namespace

void rms_norm(const float* x, const float* weight, float eps, int64_t rows, int64_t n, float* y) {
  namespace ek = elementwise_kernels;
  const ek::ElementwiseKernels* k = ek::usable_kernels();
  if (k == nullptr) {
    ek::rms_norm_reference(x, weight, eps, rows, n, y);
    return;
  }
  const auto kernel = k->rms_norm_row;
  for_rows(rows, n, [&](int64_t r) { kernel(x + r * n, weight, eps, n, y + r * n); });
}

void layer_norm(const float* x, const float* weight, const float* bias, float eps, int64_t rows,
                int64_t n, float* y) {
  namespace ek = elementwise_kernels;
  const ek::ElementwiseKernels* k = ek::usable_kernels();
  if (k == nullptr) {
    ek::layer_norm_reference(x, weight, bias, eps, rows, n, y);
    return;
  }
  const auto kernel = k->layer_norm_row;
  for_rows(rows, n, [&](int64_t r) { kernel(x + r * n, weight, bias, eps, n, y + r * n); });
}

}  // namespace qvl::ops
