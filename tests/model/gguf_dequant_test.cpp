// Blocks built by hand from chosen scales and quants (each encoded here per element, from the
// format description), checked value by value against the numbers they must give.
#include "model/gguf_dequant.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/half.h"

namespace qvl {
namespace {

constexpr uint16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfQuarter = 0x3400;
constexpr uint16_t kHalfTwo = 0x4000, kHalfMinusOne = 0xBC00;

void put_half(std::vector<uint8_t>& b, size_t at, uint16_t h) {
  std::memcpy(b.data() + at, &h, 2);
}

std::vector<float> run(GgmlType type, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), -999.0f);
  gguf_dequantize(type, bytes.data(), n, out.data());
  return out;
}

TEST(GgufDequant, PlainTypes) {
  const std::vector<float> f = {1.5f, -2.25f, 0.0f};
  std::vector<uint8_t> b(12);
  std::memcpy(b.data(), f.data(), 12);
  EXPECT_EQ(run(GgmlType::kF32, b, 3), f);
  std::vector<uint8_t> h(6);
  put_half(h, 0, kHalfOne);
  put_half(h, 2, 0xC100);  // -2.5
  put_half(h, 4, 0x0001);  // smallest subnormal, 2^-24
  EXPECT_EQ(run(GgmlType::kF16, h, 3), (std::vector<float>{1.0f, -2.5f, 5.9604645e-08f}));
  put_half(h, 0, 0x3F80);  // bf16 1.0
  put_half(h, 2, 0xC020);  // bf16 -2.5
  put_half(h, 4, 0x4049);  // bf16 3.140625
  EXPECT_EQ(run(GgmlType::kBF16, h, 3), (std::vector<float>{1.0f, -2.5f, 3.140625f}));
}

TEST(GgufDequant, Q8_0) {
  std::vector<uint8_t> b(34);
  put_half(b, 0, kHalfHalf);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j * 8 - 128));
  const std::vector<float> y = run(GgmlType::kQ8_0, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (j * 8 - 128) * 0.5f) << j;
}

TEST(GgufDequant, Q4_0AndQ4_1) {
  std::vector<uint8_t> b(18);
  put_half(b, 0, kHalfTwo);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<float> y = run(GgmlType::kQ4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 2.0f);
    EXPECT_EQ(y[j + 16], (7 - j) * 2.0f);
  }
  std::vector<uint8_t> c(20);
  put_half(c, 0, kHalfQuarter);
  put_half(c, 2, kHalfMinusOne);
  for (int j = 0; j < 16; ++j) c[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  y = run(GgmlType::kQ4_1, c, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j * 0.25f - 1.0f);
    EXPECT_EQ(y[j + 16], (15 - j) * 0.25f - 1.0f);
  }
}

TEST(GgufDequant, Q5_0AndQ5_1) {
  const uint32_t qh = 0xA5C3960Fu;  // bit e is element e's fifth bit
  std::vector<uint8_t> b(22);
  put_half(b, 0, kHalfOne);
  std::memcpy(b.data() + 2, &qh, 4);
  for (int j = 0; j < 16; ++j) b[6 + j] = 0x3C;  // low nibble 12 (elements 0..15), high 3
  std::vector<float> y = run(GgmlType::kQ5_0, b, 32);
  for (int e = 0; e < 32; ++e) {
    const int q = (e < 16 ? 12 : 3) + 16 * static_cast<int>((qh >> e) & 1);
    EXPECT_EQ(y[e], static_cast<float>(q - 16)) << e;
  }
  std::vector<uint8_t> c(24);
  put_half(c, 0, kHalfHalf);
  put_half(c, 2, kHalfQuarter);
  std::memcpy(c.data() + 4, &qh, 4);
  for (int j = 0; j < 16; ++j) c[8 + j] = 0x3C;
  y = run(GgmlType::kQ5_1, c, 32);
  for (int e = 0; e < 32; ++e) {
    const int q = (e < 16 ? 12 : 3) + 16 * static_cast<int>((qh >> e) & 1);
    EXPECT_EQ(y[e], q * 0.5f + 0.25f) << e;
  }
}

// The 12 scale bytes of Q4_K/Q5_K from 8 six-bit scales and mins.
void pack_scales(uint8_t* s, const int* sc, const int* mn) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
}

const int kScales[8] = {1, 2, 3, 4, 33, 34, 35, 63};
const int kMins[8] = {0, 5, 10, 63, 16, 17, 40, 1};

TEST(GgufDequant, Q4_K) {
  std::vector<uint8_t> b(144, 0);
  put_half(b, 0, kHalfOne);
  put_half(b, 2, kHalfHalf);
  pack_scales(b.data() + 4, kScales, kMins);
  for (int e = 0; e < 256; ++e) {
    const int q = (e * 7) % 16, sub = e / 32;
    uint8_t& byte = b[16 + (e / 64) * 32 + e % 32];
    byte = static_cast<uint8_t>(sub % 2 == 0 ? (byte & 0xF0) | q : (byte & 0x0F) | (q << 4));
  }
  const std::vector<float> y = run(GgmlType::kQ4_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int sub = e / 32;
    EXPECT_EQ(y[e], static_cast<float>(kScales[sub] * ((e * 7) % 16)) - 0.5f * kMins[sub]) << e;
  }
}

TEST(GgufDequant, Q5_K) {
  std::vector<uint8_t> b(176, 0);
  put_half(b, 0, kHalfHalf);
  put_half(b, 2, kHalfQuarter);
  pack_scales(b.data() + 4, kScales, kMins);
  const auto high = [](int e) { return (e / 3 + e / 64) % 2; };
  for (int e = 0; e < 256; ++e) {
    const int q = (e * 5) % 16, sub = e / 32;
    uint8_t& byte = b[48 + (e / 64) * 32 + e % 32];
    byte = static_cast<uint8_t>(sub % 2 == 0 ? (byte & 0xF0) | q : (byte & 0x0F) | (q << 4));
    if (high(e)) b[16 + e % 32] |= static_cast<uint8_t>(1u << sub);
  }
  const std::vector<float> y = run(GgmlType::kQ5_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int sub = e / 32, q = (e * 5) % 16 + 16 * high(e);
    EXPECT_EQ(y[e], 0.5f * kScales[sub] * q - 0.25f * kMins[sub]) << e;
  }
}

TEST(GgufDequant, Q6_K) {
  std::vector<uint8_t> b(210, 0);
  int8_t sc[16];
  for (int i = 0; i < 16; ++i) sc[i] = static_cast<int8_t>((i % 2 ? -1 : 1) * (i * 7 + 1));
  std::memcpy(b.data() + 192, sc, 16);
  put_half(b, 208, kHalfQuarter);
  const auto quant = [](int e) { return (e * 5) % 64 - 32; };
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128, r = e % 128, k = r / 32, l = r % 32;
    const int u = quant(e) + 32;  // 6 bits stored
    uint8_t& lo = b[half * 64 + l + (k % 2 ? 32 : 0)];
    lo = static_cast<uint8_t>(k < 2 ? (lo & 0xF0) | (u & 15) : (lo & 0x0F) | ((u & 15) << 4));
    b[128 + half * 32 + l] |= static_cast<uint8_t>((u >> 4) << (2 * k));
  }
  const std::vector<float> y = run(GgmlType::kQ6_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128, r = e % 128, k = r / 32, l = r % 32;
    const int s = sc[half * 8 + l / 16 + 2 * k];
    EXPECT_EQ(y[e], 0.25f * static_cast<float>(s) * static_cast<float>(quant(e))) << e;
  }
}

TEST(GgufDequant, SeveralBlocksFollowEachOther) {
  std::vector<uint8_t> b(68);
  put_half(b, 0, kHalfOne);
  put_half(b, 34, kHalfTwo);
  for (int j = 0; j < 32; ++j) b[2 + j] = b[36 + j] = static_cast<uint8_t>(j);
  const std::vector<float> y = run(GgmlType::kQ8_0, b, 64);
  EXPECT_EQ(y[31], 31.0f);
  EXPECT_EQ(y[63], 62.0f);
}

TEST(GgufDequant, RefusesUnknownTypesAndPartialBlocks) {
  std::vector<uint8_t> b(1024, 0);
  float out[256];
  EXPECT_FALSE(gguf_can_dequantize(GgmlType::kQ2_K));
  try {
    gguf_dequantize(GgmlType::kQ2_K, b.data(), 256, out);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("Q2_K"), std::string::npos);
  }
  EXPECT_THROW(gguf_dequantize(GgmlType::kQ8_0, b.data(), 31, out), Error);
  EXPECT_THROW(gguf_dequantize(GgmlType::kQ6_K, b.data(), 128, out), Error);
}

}  // namespace
}  // namespace qvl
