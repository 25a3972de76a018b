#include "ops/kv_q8.h"

#include <cmath>
#include <cstring>

namespace qvl::ops {

// Adding and subtracting 1.5 * 2^23 rounds to nearest even and vectorises (nearbyint does not).
constexpr float kRound = 12582912.0f;

void quantize_kv_q8(const float* x, int64_t n, int8_t* out) {
  for (int64_t b = 0; b < n; b += kKvQ8Block, x += kKvQ8Block, out += kKvQ8BlockBytes) {
    float amax = 0;
    for (int64_t i = 0; i < kKvQ8Block; ++i) {
      const float a = std::fabs(x[i]);
      amax = a > amax ? a : amax;  // NaN never wins
    }
    if (!std::isfinite(amax)) amax = 3.0e38f;
    const float scale = amax / 127.0f;
    const float inv = scale > 0 ? 1.0f / scale : 0.0f;
    for (int64_t i = 0; i < kKvQ8Block; ++i) {
      float r = (x[i] * inv + kRound) - kRound;
      r = r > 127.0f ? 127.0f : r;
      r = r >= -127.0f ? r : -127.0f;  // also maps NaN to a code
      out[i] = static_cast<int8_t>(r);
    }
    std::memcpy(out + kKvQ8Block, &scale, sizeof(float));
  }
}

void dequantize_kv_q8(const int8_t* in, int64_t n, float* out) {
  for (int64_t b = 0; b < n; b += kKvQ8Block, in += kKvQ8BlockBytes, out += kKvQ8Block) {
    float scale;
    std::memcpy(&scale, in + kKvQ8Block, sizeof(float));
    for (int64_t i = 0; i < kKvQ8Block; ++i) out[i] = static_cast<float>(in[i]) * scale;
  }
}

}  // namespace qvl::ops
