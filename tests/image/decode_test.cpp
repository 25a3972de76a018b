// Decoding every supported format from a corpus built at run time with the codecs' own encoders,
// compared with the source pixels (exactly for lossless formats).
#include "image/decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "base/error.h"
#include "image/decode_corpus.h"
#include "image/decode_corpus_gif_bmp.h"

namespace qvl {
namespace {

using test::Bytes;

RgbImage decode(const Bytes& bytes, const DecodeLimits& limits = {}) {
  return decode_image(bytes.data(), bytes.size(), limits);
}

struct Difference {
  double mean = 0;
  int max = 0;
};

Difference compare(const RgbImage& a, const RgbImage& b) {
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  Difference d;
  if (a.pixels.size() != b.pixels.size() || a.pixels.empty()) return {255, 255};
  for (size_t i = 0; i < a.pixels.size(); ++i) {
    const int diff = std::abs(int(a.pixels[i]) - int(b.pixels[i]));
    d.mean += diff;
    d.max = std::max(d.max, diff);
  }
  d.mean /= double(a.pixels.size());
  return d;
}

// The alpha rule, written with floating point as the spec states it.
uint8_t over_white_reference(int c, int a) {
  return static_cast<uint8_t>(std::lround(c * a / 255.0 + 255.0 * (1.0 - a / 255.0)));
}

TEST(DecodeAlpha, CompositeOverWhiteMatchesTheFormulaForEveryInput) {
  for (int a = 0; a < 256; ++a) {
    for (int c = 0; c < 256; ++c) {
      ASSERT_EQ(composite_over_white(uint8_t(c), uint8_t(a)), over_white_reference(c, a))
          << "c=" << c << " a=" << a;
    }
  }
  EXPECT_EQ(composite_over_white(0, 0), 255);
  EXPECT_EQ(composite_over_white(17, 255), 17);
  EXPECT_EQ(composite_over_white(0, 128), 127);    // 255 * 127/255 = 127 exactly
  EXPECT_EQ(composite_over_white(200, 100), 233);  // 78.43 + 155 = 233.43
}

TEST(DecodeJpeg, BaselineIsCloseToTheSource) {
  const RgbImage source = test::make_test_image(61, 37);
  const RgbImage decoded = decode(test::encode_jpeg(source, {.quality = 95}));
  const Difference d = compare(decoded, source);
  EXPECT_LT(d.mean, 2.5);
  EXPECT_LT(d.max, 40);
}

TEST(DecodeJpeg, ProgressiveDecodesToTheSamePixelsAsBaseline) {
  // Same quantisation tables, so once every scan is in, the coefficients are identical.
  const RgbImage source = test::make_test_image(50, 34);
  const RgbImage baseline = decode(test::encode_jpeg(source, {.quality = 90}));
  const Bytes progressive_file = test::encode_jpeg(source, {.quality = 90, .progressive = true});
  const RgbImage progressive = decode(progressive_file);
  EXPECT_EQ(progressive.pixels, baseline.pixels);
  EXPECT_LT(compare(progressive, source).mean, 3.0);
}

TEST(DecodeJpeg, StrayBytesBetweenSegmentsAreSkippedLikeLibjpegDoes) {
  const Bytes clean = test::encode_jpeg(test::make_test_image(24, 16));
  Bytes junk = clean;
  const size_t after_app0 = 4 + ((size_t(clean[4]) << 8) | clean[5]);  // SOI + APP0 segment
  ASSERT_EQ(clean[after_app0], 0xFF);
  junk.insert(junk.begin() + after_app0, {'x', 'y', 'z'});
  EXPECT_EQ(decode(junk).pixels, decode(clean).pixels);
}

TEST(DecodeJpeg, GreyscaleIsReplicatedToThreeChannels) {
  const RgbImage source = test::make_test_image(40, 24);
  const RgbImage decoded = decode(test::encode_jpeg(source, {.quality = 95, .grey = true}));
  ASSERT_EQ(decoded.width, 40);
  double error = 0;
  for (size_t i = 0; i < size_t(40 * 24); ++i) {
    EXPECT_EQ(decoded.pixels[3 * i], decoded.pixels[3 * i + 1]);
    EXPECT_EQ(decoded.pixels[3 * i], decoded.pixels[3 * i + 2]);
    error += std::abs(int(decoded.pixels[3 * i]) - int(source.pixels[3 * i]));
  }
  EXPECT_LT(error / (40 * 24), 2.0);
}

TEST(DecodeJpeg, AdobeCmykIsInvertedAndConvertedLikePillow) {
  // Flat 8x8 blocks at quality 100 survive the DCT exactly, so the colour rule is checked
  // exactly. Inks (C, M, Y, K) are stored inverted, as Photoshop writes them.
  const uint8_t inks[4][4] = {{255, 0, 0, 0}, {0, 128, 255, 0}, {40, 90, 200, 100}, {0, 0, 0, 255}};
  const int width = 32, height = 8;
  Bytes stored(size_t(width) * height * 4);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 4; ++c) stored[(size_t(y) * width + x) * 4 + c] = 255 - inks[x / 8][c];
    }
  }
  const Bytes file =
      test::encode_jpeg_samples(stored.data(), width, height, 4, JCS_CMYK, {.quality = 100});
  const RgbImage decoded = decode(file);
  ASSERT_EQ(decoded.width, width);
  for (int block = 0; block < 4; ++block) {
    const int k = inks[block][3];
    for (int c = 0; c < 3; ++c) {
      const int expected = (255 - k) - int(std::lround(inks[block][c] * (255 - k) / 255.0));
      EXPECT_EQ(decoded.pixels[(3 * width + block * 8 + 3) * 3 + c], expected)
          << "block " << block << " channel " << c;
    }
  }
  // Pure cyan ink on white paper is (0, 255, 255); full black ink is black.
  EXPECT_EQ(decoded.pixels[0], 0);
  EXPECT_EQ(decoded.pixels[1], 255);
  EXPECT_EQ(decoded.pixels[(24 + 3) * 3], 0);
}

TEST(DecodeJpeg, MatchesPillowOnTheGoldenImageExactly) {
  const std::string dir = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a/images/";
  const RgbImage ours = decode_image_file(dir + "a_iii_scene_640x480.jpg");
  const RgbImage pil = decode_image_file(dir + "a_iii_scene_640x480.decoded_by_PIL.png");
  ASSERT_EQ(ours.width, 640);
  ASSERT_EQ(ours.height, 480);
  const Difference d = compare(ours, pil);
  EXPECT_EQ(d.max, 0) << "mean difference " << d.mean;
}

TEST(DecodeGolden, PngsDecodeToTheirStatedSizes) {
  const std::string dir = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a/images/";
  const struct {
    const char* name;
    int width, height;
  } cases[] = {{"a_ii_shapes_200x120.png", 200, 120},
               {"a_iv_checker_400x336.png", 400, 336},
               {"a_iv_shapes_256x200.png", 256, 200},
               {"a_v_square_97x61.png", 97, 61}};
  for (const auto& c : cases) {
    const RgbImage image = decode_image_file(dir + c.name);
    EXPECT_EQ(image.width, c.width) << c.name;
    EXPECT_EQ(image.height, c.height) << c.name;
    EXPECT_EQ(image.pixels.size(), size_t(c.width) * c.height * 3) << c.name;
  }
}

}  // namespace
}  // namespace qvl
