#include "model/mrope.h"

#include <cmath>

namespace qvl {

MRope::MRope(const TextConfig& c) {
  const int64_t half = c.head_dim / 2;
  inv_freq_.resize(half);
  stream_.resize(half);
  // Same float32 steps as the reference: exponent 2i/d in fp32, pow, then reciprocal.
  const float base = static_cast<float>(c.rope_theta);
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(c.head_dim);
    inv_freq_[i] = 1.0f / std::pow(base, exponent);
    // Interleaved layout: frequencies cycle t, h, w; h and w only within their section sizes.
    if (i % 3 == 1 && i < 3 * c.mrope_section[1]) {
      stream_[i] = 1;
    } else if (i % 3 == 2 && i < 3 * c.mrope_section[2]) {
      stream_[i] = 2;
    } else {
      stream_[i] = 0;
    }
  }
}

void MRope::tables(const int64_t* positions, int64_t n, float* cos, float* sin) const {
  const int64_t half = half_dim();
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const float pos = static_cast<float>(positions[stream_[i] * n + t]);
      const float angle = pos * inv_freq_[i];
      cos[t * half + i] = std::cos(angle);
      sin[t * half + i] = std::sin(angle);
    }
  }
}

}  // namespace qvl
