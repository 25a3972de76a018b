#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "base/aligned_buffer.h"
#include "base/error.h"
#include "base/half.h"
#include "base/log.h"
#include "base/mapped_file.h"

namespace qvl {
namespace {

TEST(Half, Bf16RoundTripIsExactForBf16Values) {
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_bf16(f), h);
  }
}

TEST(Half, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(Half, F16Values) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
}

TEST(AlignedBuffer, AlignedAndKeepsContents) {
  AlignedBuffer<float> b(3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  b[0] = 1;
  b[2] = 3;
  b.resize(1000);
  EXPECT_EQ(b[0], 1);
  EXPECT_EQ(b[2], 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
}

TEST(MappedFile, MapsAndReportsMissing) {
  const std::string path = testing::TempDir() + "/qvl_mapped.bin";
  {
    std::ofstream out(path, std::ios::binary);
    out << "hello";
  }
  MappedFile f(path);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data()), 5), "hello");
  try {
    MappedFile missing(path + ".nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("qvl_mapped.bin.nope"), std::string::npos);
  }
  std::remove(path.c_str());
}

TEST(Log, ParsesLevels) {
  EXPECT_EQ(parse_log_level("warn"), LogLevel::kWarn);
  EXPECT_THROW(parse_log_level("loud"), Error);
}

}  // namespace
}  // namespace qvl
