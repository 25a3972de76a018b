// Shared by the int8 GEMM tests: a problem's shape, the dequantized weights of a q8/q4 matrix, and
// the fp32 summation bound between a kernel and the oracle.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/packed_matrix.h"

namespace qvl::ops::testing {

struct Problem {
  int64_t n, k, m;
};

inline std::vector<float> dequantized(const PackedMatrix& w) {
  std::vector<float> wd(static_cast<size_t>(w.rows() * w.cols()));
  for (int64_t r = 0; r < w.rows(); ++r) w.row_to_f32(r, wd.data() + r * w.cols());
  return wd;
}

// The oracle's fp32 sums and a kernel's differ only in order and fma rounding: per output at most
// a few ulps of the sum of |term| over blocks, which sum |w| * |x| (dequantized w, fp32 x) bounds
// within the activation rounding.
inline double summation_bound(const std::vector<float>& wd, const std::vector<float>& x, int64_t k,
                              int64_t i, int64_t r) {
  double s = 0;
  for (int64_t j = 0; j < k; ++j) {
    s += std::fabs(static_cast<double>(wd[static_cast<size_t>(r * k + j)]) *
                   x[static_cast<size_t>(i * k + j)]);
  }
  return 4e-6 * s + 1e-6;
}

}  // namespace qvl::ops::testing
