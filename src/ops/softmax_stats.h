// What a log-softmax of a whole row needs (log-probabilities of a step's logits): the row's largest
// value and the sum of exp(x - max). Vector kernels compute the exponentials in float (relative
// error ~1e-7 per term) and sum them in double; the scalar reference uses double throughout.
#pragma once

#include <cstdint>

namespace qvl::ops {

struct ExpSum {
  float max = 0;   // the largest x, NaN read as -inf (-inf for an empty or all -inf/NaN row)
  double sum = 0;  // sum_i exp(x_i - max) with NaN terms 0; 0 when max is not finite
};

ExpSum exp_sum(const float* x, int64_t n);

}  // namespace qvl::ops
