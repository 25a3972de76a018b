#include "ops/rope.h"

namespace qvl::ops {

void rope_rotate_half(float* x, int64_t n_heads, int64_t head_dim, const float* cos,
                      const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cos[i] - b * sin[i];
      v[i + half] = b * cos[i] + a * sin[i];
    }
  }
}

}  // namespace qvl::ops
