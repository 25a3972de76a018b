#include "ops/softmax_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/elementwise_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace elementwise_kernels {

ExpSum exp_sum_reference(const float* x, int64_t n) {
  const auto clean = [](float v) {
    return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v;
  };
  ExpSum out{-std::numeric_limits<float>::infinity(), 0.0};
  for (int64_t i = 0; i < n; ++i) out.max = std::max(out.max, clean(x[i]));
  if (!std::isfinite(out.max)) return out;
  // Four fixed lanes: the same sum on every call.
  double lanes[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < n; ++i) {
    lanes[i & 3] += std::exp(static_cast<double>(clean(x[i])) - out.max);
  }
  out.sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  return out;
}

}  // namespace elementwise_kernels

ExpSum exp_sum(const float* x, int64_t n) {
  namespace ek = elementwise_kernels;
  const ek::ElementwiseKernels* k = ek::usable_kernels();
  return k != nullptr ? k->exp_sum(x, n) : ek::exp_sum_reference(x, n);
}

}  // namespace qvl::ops
