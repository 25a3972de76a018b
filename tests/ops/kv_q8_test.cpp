// The 8-bit KV format: layout, rounding error bound, and hostile values.
#include "ops/kv_q8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "isa_test_util.h"

namespace qvl::ops {
namespace {

TEST(KvQ8, RoundTripErrorIsAtMostHalfAStepPerBlock) {
  const int64_t n = 4 * kKvQ8Block;
  auto x = testing::random_vector(n, 7, 3.0f);
  x[5] = 40.0f;  // an outlier only widens its own block's step
  std::vector<int8_t> q(static_cast<size_t>(kv_q8_bytes(n)));
  std::vector<float> back(static_cast<size_t>(n));
  quantize_kv_q8(x.data(), n, q.data());
  dequantize_kv_q8(q.data(), n, back.data());
  for (int64_t b = 0; b < n / kKvQ8Block; ++b) {
    float amax = 0, scale = 0;
    for (int64_t i = 0; i < kKvQ8Block; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
    std::memcpy(&scale, q.data() + b * kKvQ8BlockBytes + kKvQ8Block, sizeof(float));
    EXPECT_FLOAT_EQ(scale, amax / 127.0f);
    for (int64_t i = 0; i < kKvQ8Block; ++i) {
      EXPECT_LE(std::fabs(back[b * 32 + i] - x[b * 32 + i]), 0.5f * scale * 1.0001f) << b << i;
      EXPECT_EQ(q[b * kKvQ8BlockBytes + i],
                static_cast<int8_t>(std::nearbyint(x[b * 32 + i] / scale)));
    }
  }
  EXPECT_EQ(back[5], 40.0f);  // the block's maximum is exact
}

TEST(KvQ8, ZerosAndNonFiniteValuesGiveValidCodes) {
  std::vector<float> x(kKvQ8Block, 0.0f);
  std::vector<int8_t> q(static_cast<size_t>(kKvQ8BlockBytes));
  std::vector<float> back(kKvQ8Block);
  quantize_kv_q8(x.data(), kKvQ8Block, q.data());
  dequantize_kv_q8(q.data(), kKvQ8Block, back.data());
  for (float v : back) EXPECT_EQ(v, 0.0f);
  x[0] = std::numeric_limits<float>::infinity();
  x[1] = std::numeric_limits<float>::quiet_NaN();
  x[2] = -5.0f;
  quantize_kv_q8(x.data(), kKvQ8Block, q.data());
  for (int64_t i = 0; i < kKvQ8Block; ++i) {
    EXPECT_GE(q[i], -127);
    EXPECT_LE(q[i], 127);
  }
}

}  // namespace
}  // namespace qvl::ops
