// PackedMatrix: formats, quantization error bounds, view() round trips and shape errors.
#include "ops/packed_matrix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "ops/packed_kernels.h"

namespace qvl::ops {
namespace {

std::vector<float> random_weights(int64_t rows, int64_t cols, uint32_t seed, float sigma = 0.05f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (auto& v : w) v = dist(rng);
  return w;
}

WeightRef f32_ref(const std::vector<float>& w, int64_t rows, int64_t cols) {
  return WeightRef{WeightType::kF32, w.data(), rows, cols};
}

std::vector<float> dequantized(const PackedMatrix& m) {
  std::vector<float> out(static_cast<size_t>(m.rows() * m.cols()));
  for (int64_t r = 0; r < m.rows(); ++r) m.row_to_f32(r, out.data() + r * m.cols());
  return out;
}

TEST(QuantType, NamesRoundTrip) {
  for (QuantType t : {QuantType::kExact, QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
    EXPECT_EQ(parse_quant_type(quant_type_name(t)), t);
  }
  // Internal storage types are not users' choices.
  for (const char* name : {"q5", "q8-strips"}) {
    try {
      parse_quant_type(name);
      FAIL() << "expected an error for " << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
  }
}

TEST(HalfConversion, EveryHalfRoundTripsAndMidpointsRoundToEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;  // NaN payloads
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    ASSERT_EQ(kernels::f32_to_f16(f), h) << h;
    if ((h & 0x7fff) >= 0x7bff) continue;  // no next finite half above
    const float next = f16_to_f32(static_cast<uint16_t>(h + 1));
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
    ASSERT_EQ(kernels::f32_to_f16(f + (next - f) / 2), even) << h;
  }
  EXPECT_EQ(kernels::f32_to_f16(1e6f), 0x7c00);
  EXPECT_EQ(kernels::f32_to_f16(-65520.0f), 0xfc00);
  EXPECT_EQ(kernels::f32_to_f16(65519.0f), 0x7bff);
}

TEST(PackedMatrix, Bf16IsExactForBf16SourceAndRoundsF32ToNearestEven) {
  const int64_t rows = 7, cols = 96;
  const auto w = random_weights(rows, cols, 1);
  std::vector<uint16_t> bf(w.size());
  for (size_t i = 0; i < w.size(); ++i) bf[i] = f32_to_bf16(w[i]);
  const auto from_bf16 =
      PackedMatrix::pack(WeightRef{WeightType::kBF16, bf.data(), rows, cols}, QuantType::kBF16);
  const auto from_f32 = PackedMatrix::pack(f32_ref(w, rows, cols), QuantType::kBF16);
  EXPECT_EQ(from_bf16.size_bytes(), static_cast<size_t>(2 * 4 * cols * 2));  // 2 groups of 4 rows
  const auto a = dequantized(from_bf16), b = dequantized(from_f32);
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_EQ(a[i], bf16_to_f32(bf[i]));
    ASSERT_EQ(b[i], bf16_to_f32(bf[i]));
  }
}

// Worst error over each block of 32 must stay within half a step of the block's scale.
void expect_block_error_within(QuantType type, float steps_per_max) {
  const int64_t rows = 9, cols = 256;
  auto w = random_weights(rows, cols, 2);
  for (int64_t j = 0; j < 32; ++j) w[static_cast<size_t>(3 * cols + 64 + j)] = 0.0f;  // zero block
  w[static_cast<size_t>(5 * cols + 7)] = 3.0f;                                        // outlier
  const auto m = PackedMatrix::pack(f32_ref(w, rows, cols), type);
  const auto d = dequantized(m);
  int64_t exact_extremes = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < cols / 32; ++b) {
      float amax = 0;
      for (int64_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(w[r * cols + b * 32 + j]));
      const float bound = amax / (2 * steps_per_max) * (1 + 1.0f / 1024);
      for (int64_t j = 0; j < 32; ++j) {
        const size_t i = static_cast<size_t>(r * cols + b * 32 + j);
        ASSERT_LE(std::fabs(d[i] - w[i]), bound) << "row " << r << " block " << b;
        if (std::fabs(w[i]) == amax && amax > 0) {
          // The block maximum lands on the top level (up to the fp16 rounding of the scale).
          EXPECT_NEAR(std::fabs(d[i]), amax, amax / 1024);
          ++exact_extremes;
        }
      }
    }
  }
  EXPECT_GE(exact_extremes, rows * cols / 32 - 1);
}

TEST(PackedMatrix, Q8ErrorIsAtMostHalfAStepOf127Levels) {
  expect_block_error_within(QuantType::kQ8, 127);
}

TEST(PackedMatrix, Q4ErrorIsAtMostHalfAStepOf7Levels) {
  expect_block_error_within(QuantType::kQ4, 7);
}

TEST(PackedMatrix, SizesFollowTheFormat) {
  EXPECT_EQ(packed_size_bytes(QuantType::kBF16, 8, 64), 8u * 64 * 2);
  EXPECT_EQ(packed_size_bytes(QuantType::kQ8, 8, 64), 2u * 2 * (8 + 128));
  EXPECT_EQ(packed_size_bytes(QuantType::kQ4, 5, 64), 2u * 2 * (8 + 64));  // padded to 8 rows
  // Strips of 32 rows (the last padded), per block 32 x 32 bytes and 32 fp16 scales.
  EXPECT_EQ(packed_size_bytes(QuantType::kQ8Strips, 33, 64), 2u * 2 * (1024 + 64));
  EXPECT_EQ(packed_size_bytes(QuantType::kQ8Strips, 64, 32),
            packed_size_bytes(QuantType::kQ8, 64, 32));
  // q4: per block 32 x 16 bytes of nibble pairs and 32 fp16 scales.
  EXPECT_EQ(packed_size_bytes(QuantType::kQ4Strips, 33, 64), 2u * 2 * (512 + 64));
  EXPECT_EQ(packed_size_bytes(QuantType::kQ4Strips, 64, 32),
            packed_size_bytes(QuantType::kQ4, 64, 32));
}

TEST(PackedMatrix, Q8StripsHoldTheQ8ValuesInTheirLayout) {
  const int64_t rows = 45, cols = 96;  // a strip and a padded one, 3 blocks
  const auto w = random_weights(rows, cols, 5);
  const auto q8 = PackedMatrix::pack(f32_ref(w, rows, cols), QuantType::kQ8);
  const auto strips = PackedMatrix::pack(f32_ref(w, rows, cols), QuantType::kQ8Strips);
  EXPECT_EQ(dequantized(strips), dequantized(q8));
  // Row 33 (strip 1, row 1), block 2, column 9 (quad 2, byte 1): q + 128 at
  // strip * 3 * 1088 + block * 1088 + quad * 128 + row * 4 + byte; its scale after the quads.
  const auto* bytes = static_cast<const uint8_t*>(strips.bytes());
  const uint8_t* block = bytes + 1 * 3 * kStripBlockBytes + 2 * kStripBlockBytes;
  uint16_t h;
  std::memcpy(&h, block + 1024 + 1 * 2, 2);
  const float scale = f16_to_f32(h);
  EXPECT_GT(scale, 0.0f);
  EXPECT_EQ(scale * static_cast<float>(block[2 * 128 + 1 * 4 + 1] - 128),
            dequantized(q8)[static_cast<size_t>(33 * cols + 2 * 32 + 9)]);
  // Padded rows are zero: q = 0 (stored 128), scale 0.
  const uint8_t* last = bytes + 1 * 3 * kStripBlockBytes;
  EXPECT_EQ(last[5 * 128 + 20 * 4 + 3], 128);
  EXPECT_EQ(last[1024 + 20 * 2] | last[1024 + 20 * 2 + 1], 0);
}

TEST(PackedMatrix, Q4StripsHoldTheQ4ValuesInTheirLayout) {
  const int64_t rows = 45, cols = 96;
  const auto w = random_weights(rows, cols, 6);
  const auto q4 = PackedMatrix::pack(f32_ref(w, rows, cols), QuantType::kQ4);
  const auto strips = PackedMatrix::pack(f32_ref(w, rows, cols), QuantType::kQ4Strips);
  EXPECT_EQ(dequantized(strips), dequantized(q4));
  // Row 33 (strip 1, row 1), block 2, columns 9 and 13 (pair 1, byte 1, low and high nibble):
  // q + 8 at strip * 3 * 576 + block * 576 + pair * 128 + row * 4 + byte; scales after the pairs.
  const auto* bytes = static_cast<const uint8_t*>(strips.bytes());
  const uint8_t* block = bytes + 1 * 3 * kQ4StripBlockBytes + 2 * kQ4StripBlockBytes;
  uint16_t h;
  std::memcpy(&h, block + 512 + 1 * 2, 2);
  const float scale = f16_to_f32(h);
  EXPECT_GT(scale, 0.0f);
  const uint8_t byte = block[1 * 128 + 1 * 4 + 1];
  const size_t at = static_cast<size_t>(33 * cols + 2 * 32);
  EXPECT_EQ(scale * static_cast<float>((byte & 0x0f) - 8), dequantized(q4)[at + 9]);
  EXPECT_EQ(scale * static_cast<float>((byte >> 4) - 8), dequantized(q4)[at + 13]);
  // Padded rows are zero: q = 0 (both nibbles 8), scale 0.
  const uint8_t* last = bytes + 1 * 3 * kQ4StripBlockBytes;
  EXPECT_EQ(last[3 * 128 + 20 * 4 + 3], 0x88);
  EXPECT_EQ(last[512 + 20 * 2] | last[512 + 20 * 2 + 1], 0);
}

TEST(PackedMatrix, PackingIsDeterministicAndViewRoundTrips) {
  const int64_t rows = 13, cols = 160;
  const auto w = random_weights(rows, cols, 3);
  for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4, QuantType::kQ8Strips,
                         QuantType::kQ4Strips}) {
    const auto a = PackedMatrix::pack(f32_ref(w, rows, cols), type);
    const auto b = PackedMatrix::pack(f32_ref(w, rows, cols), type);
    ASSERT_EQ(a.size_bytes(), packed_size_bytes(type, rows, cols));
    ASSERT_EQ(a.size_bytes(), b.size_bytes());
    EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.size_bytes()), 0) << quant_type_name(type);
    const auto v = PackedMatrix::view(type, rows, cols, a.bytes(), a.size_bytes());
    EXPECT_EQ(v.type(), type);
    EXPECT_EQ(v.rows(), rows);
    EXPECT_EQ(v.cols(), cols);
    EXPECT_EQ(v.bytes(), a.bytes());  // no copy
    EXPECT_EQ(dequantized(v), dequantized(a));
    try {
      PackedMatrix::view(type, rows, cols, a.bytes(), a.size_bytes() - 1);
      FAIL() << "expected a size error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
  }
}

TEST(PackedMatrix, ExactKeepsAViewOfTheSource) {
  const auto w = random_weights(3, 40, 4);
  const auto m = PackedMatrix::pack(f32_ref(w, 3, 40), QuantType::kExact);
  EXPECT_EQ(m.bytes(), w.data());
  EXPECT_EQ(m.size_bytes(), w.size() * 4);
  EXPECT_EQ(dequantized(m), w);
  const auto v = PackedMatrix::view(QuantType::kExact, 3, 40, w.data(), w.size() * 4);
  EXPECT_EQ(dequantized(v), w);
}

TEST(PackedMatrix, RejectsUnsupportedShapes) {
  const auto w = random_weights(4, 48, 5);
  for (QuantType type : {QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
    try {
      PackedMatrix::pack(f32_ref(w, 4, 48), type);  // 48 columns: not whole blocks of 32
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      EXPECT_NE(std::string(e.what()).find("32"), std::string::npos);
    }
    EXPECT_THROW(PackedMatrix::pack(f32_ref(w, 0, 32), type), Error);
    EXPECT_THROW(PackedMatrix::pack(f32_ref(w, -1, 32), type), Error);
  }
  const auto m = PackedMatrix::pack(f32_ref(w, 4, 32), QuantType::kQ8);
  std::vector<float> row(32);
  EXPECT_THROW(m.row_to_f32(4, row.data()), Error);
  EXPECT_THROW(m.row_to_f32(-1, row.data()), Error);
}

}  // namespace
}  // namespace qvl::ops
