// Row conversions fp32 <-> half at every ISA level against the scalar conversions.
#include "ops/half_convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/half.h"
#include "isa_test_util.h"
#include "ops/packed_kernels.h"

namespace qvl::ops {
namespace {

using testing::available_isas;
using testing::IsaScope;

std::vector<float> awkward_values() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          65504.0f,
                          65519.0f,
                          65520.0f,
                          -1e6f,
                          6.1e-5f,
                          6.0e-8f,
                          2.9e-8f,
                          3.1e-8f,
                          1e-10f,
                          0.1f,
                          1.0f / 3,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-30.0f, 18.0f);
  for (int i = 0; i < 1000; ++i) {
    const float x = std::exp2(exponent(rng));
    v.push_back(i % 2 ? x : -x);
  }
  return v;  // 1017 values: full vectors and a tail
}

TEST(HalfConvert, RoundTripsAgreeWithScalarAtEveryIsa) {
  const auto x = awkward_values();
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = kernels::f32_to_f16(x[i]);
  for (IsaLevel isa : available_isas()) {
    IsaScope scope(isa);
    std::vector<uint16_t> got(x.size());
    f32_to_f16_row(x.data(), n, got.data());
    EXPECT_EQ(got, want) << isa_level_name(isa);
    std::vector<float> back(x.size());
    f16_to_f32_row(got.data(), n, back.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const float expect = qvl::f16_to_f32(want[i]);
      EXPECT_EQ(std::memcmp(&back[i], &expect, sizeof(float)), 0)
          << isa_level_name(isa) << " value " << x[i];
    }
  }
}

TEST(HalfConvert, NanStaysNan) {
  const float x[9] = {NAN, 1, 2, 3, 4, 5, 6, 7, -NAN};
  for (IsaLevel isa : available_isas()) {
    IsaScope scope(isa);
    uint16_t h[9];
    float back[9];
    f32_to_f16_row(x, 9, h);
    f16_to_f32_row(h, 9, back);
    EXPECT_TRUE(std::isnan(back[0]) && std::isnan(back[8])) << isa_level_name(isa);
    EXPECT_EQ(back[3], 3.0f);
  }
}

}  // namespace
}  // namespace qvl::ops
