#include "image/resize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "base/error.h"

namespace qvl {
namespace {

RgbImage random_image(int width, int height, unsigned seed) {
  RgbImage image{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  std::mt19937 rng(seed);
  for (auto& v : image.pixels) v = static_cast<uint8_t>(rng() & 0xff);
  return image;
}

// Textbook floating-point version of the same resampling (antialiased Keys cubic, a = -0.5,
// separable, 8-bit intermediate image). Only fixed-point rounding may differ from resize_bicubic.
double keys_cubic(double x) {
  x = std::fabs(x);
  if (x < 1) return 1.5 * x * x * x - 2.5 * x * x + 1;
  if (x < 2) return -0.5 * x * x * x + 2.5 * x * x - 4 * x + 2;
  return 0;
}

std::vector<std::vector<double>> float_weights(int in, int out, std::vector<int>* first) {
  const double scale = static_cast<double>(in) / out;
  const double stretch = std::max(1.0, scale);
  std::vector<std::vector<double>> weights(out);
  first->assign(out, 0);
  for (int o = 0; o < out; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(0, static_cast<int>(std::floor(center - 2 * stretch + 0.5)));
    const int hi = std::min(in, static_cast<int>(std::floor(center + 2 * stretch + 0.5)));
    double total = 0;
    for (int i = lo; i < hi; ++i) {
      weights[o].push_back(keys_cubic((i + 0.5 - center) / stretch));
      total += weights[o].back();
    }
    for (double& w : weights[o]) w /= total;
    (*first)[o] = lo;
  }
  return weights;
}

uint8_t to_u8(double v) {
  return static_cast<uint8_t>(std::clamp(std::floor(v + 0.5), 0.0, 255.0));
}

RgbImage float_resize(const RgbImage& src, int out_w, int out_h) {
  std::vector<int> fx, fy;
  const auto wx = float_weights(src.width, out_w, &fx);
  const auto wy = float_weights(src.height, out_h, &fy);
  RgbImage mid{out_w, src.height,
               std::vector<uint8_t>(static_cast<size_t>(out_w) * src.height * 3)};
  for (int y = 0; y < src.height; ++y)
    for (int x = 0; x < out_w; ++x)
      for (int c = 0; c < 3; ++c) {
        double s = 0;
        for (size_t i = 0; i < wx[x].size(); ++i)
          s += wx[x][i] * src.pixels[(static_cast<size_t>(y) * src.width + fx[x] + i) * 3 + c];
        mid.pixels[(static_cast<size_t>(y) * out_w + x) * 3 + c] = to_u8(s);
      }
  RgbImage out{out_w, out_h, std::vector<uint8_t>(static_cast<size_t>(out_w) * out_h * 3)};
  for (int y = 0; y < out_h; ++y)
    for (int x = 0; x < out_w; ++x)
      for (int c = 0; c < 3; ++c) {
        double s = 0;
        for (size_t i = 0; i < wy[y].size(); ++i)
          s += wy[y][i] * mid.pixels[((fy[y] + i) * out_w + x) * 3 + c];
        out.pixels[(static_cast<size_t>(y) * out_w + x) * 3 + c] = to_u8(s);
      }
  return out;
}

// Deterministic test pattern (gradients, a non-linear ramp and hashed noise); the Python twin
// used to make the constants below builds the same bytes.
RgbImage pattern_image(int width, int height) {
  RgbImage image{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const uint32_t i = static_cast<uint32_t>(y) * width + x;
      uint8_t* p = &image.pixels[i * size_t{3}];
      p[0] = static_cast<uint8_t>((x * 7 + y * 3) % 256);
      p[1] = static_cast<uint8_t>((static_cast<int64_t>(x) * x / (y + 1)) % 256);
      p[2] = static_cast<uint8_t>((i * 2654435761u) >> 24);
    }
  }
  return image;
}

uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

// Outputs of Pillow 9.4.0 (the goldens' version), Image.frombytes("RGB", (w, h), pattern)
// .resize((tw, th), resample=Image.BICUBIC).tobytes(): FNV-1a 64 hash and byte sum. They cover
// strong reductions (up to 31x) and enlargements that the model goldens do not.
struct PillowCase {
  int src_w, src_h, dst_w, dst_h;
  uint64_t hash;
  uint32_t sum;
};
constexpr PillowCase kPillowCases[] = {
    {400, 300, 96, 64, 0x095da5e238225310ull, 2193823u},
    {640, 480, 1024, 768, 0x4c44a3a76cf79a34ull, 285033291u},
    {97, 61, 352, 224, 0xcf5af1dc8b28d31aull, 26562491u},
    {2000, 37, 64, 32, 0xa66b2a25e49def9aull, 767385u},
    {333, 777, 32, 1024, 0x35b279056d1b413eull, 10933765u},
    {1200, 900, 448, 900, 0x767ddac06a759fbcull, 148312209u},
    {257, 129, 255, 127, 0x90b81d110cc2614full, 11532100u},
    {5, 3, 1, 1, 0x5b2e1818b59c4183ull, 142u},
};

TEST(Resize, BitExactWithPillow) {
  for (const PillowCase& c : kPillowCases) {
    const RgbImage out = resize_bicubic(pattern_image(c.src_w, c.src_h), c.dst_w, c.dst_h);
    uint32_t sum = 0;
    for (uint8_t v : out.pixels) sum += v;
    EXPECT_EQ(sum, c.sum) << c.src_w << "x" << c.src_h << " -> " << c.dst_w << "x" << c.dst_h;
    EXPECT_EQ(fnv1a(out.pixels), c.hash)
        << c.src_w << "x" << c.src_h << " -> " << c.dst_w << "x" << c.dst_h;
  }
}

TEST(Resize, SameSizeIsACopy) {
  const RgbImage src = random_image(37, 23, 1);
  const RgbImage out = resize_bicubic(src, 37, 23);
  EXPECT_EQ(out.width, 37);
  EXPECT_EQ(out.height, 23);
  EXPECT_EQ(out.pixels, src.pixels);
}

TEST(Resize, ConstantImageStaysConstant) {
  for (int value : {0, 1, 128, 254, 255}) {
    RgbImage src{50, 30, std::vector<uint8_t>(50 * 30 * 3, static_cast<uint8_t>(value))};
    for (auto [w, h] : {std::pair{17, 9}, std::pair{50, 61}, std::pair{123, 30}, std::pair{3, 2}}) {
      const RgbImage out = resize_bicubic(src, w, h);
      ASSERT_EQ(out.pixels.size(), static_cast<size_t>(w) * h * 3);
      for (uint8_t v : out.pixels) ASSERT_EQ(v, value) << w << "x" << h;
    }
  }
}

TEST(Resize, MatchesFloatingPointReferenceWithinOneLevel) {
  const RgbImage src = random_image(97, 61, 7);
  for (auto [w, h] : {std::pair{352, 224}, std::pair{32, 32}, std::pair{40, 61}, std::pair{97, 20},
                      std::pair{1, 1}, std::pair{200, 13}}) {
    const RgbImage got = resize_bicubic(src, w, h);
    const RgbImage want = float_resize(src, w, h);
    ASSERT_EQ(got.pixels.size(), want.pixels.size());
    size_t differing = 0;
    for (size_t i = 0; i < got.pixels.size(); ++i) {
      const int diff = std::abs(int{got.pixels[i]} - int{want.pixels[i]});
      ASSERT_LE(diff, 1) << w << "x" << h << " at " << i;
      differing += diff != 0;
    }
    // Fixed-point rounding may flip a value that sits on a rounding boundary, not many.
    EXPECT_LE(differing, got.pixels.size() / 100 + 1) << w << "x" << h;
  }
}

TEST(Resize, HorizontalOnlyResizeKeepsRowsIndependent) {
  const RgbImage src = random_image(64, 5, 3);
  const RgbImage out = resize_bicubic(src, 29, 5);
  for (int y = 0; y < 5; ++y) {
    RgbImage row{64, 1, {src.pixels.begin() + y * 64 * 3, src.pixels.begin() + (y + 1) * 64 * 3}};
    const RgbImage row_out = resize_bicubic(row, 29, 1);
    EXPECT_TRUE(
        std::equal(row_out.pixels.begin(), row_out.pixels.end(), out.pixels.begin() + y * 29 * 3))
        << "row " << y;
  }
}

TEST(Resize, LargeImageUsesThreadsWithoutChangingResults) {
  // Big enough to be split across the pool; compared with strips resized on their own, which
  // must agree because the horizontal pass treats every row independently.
  const RgbImage src = random_image(1500, 400, 11);
  const RgbImage out = resize_bicubic(src, 700, 400);
  const RgbImage strip{1500, 1, {src.pixels.begin() + 399 * 1500 * 3, src.pixels.end()}};
  const RgbImage strip_out = resize_bicubic(strip, 700, 1);
  EXPECT_TRUE(std::equal(strip_out.pixels.begin(), strip_out.pixels.end(),
                         out.pixels.begin() + 399 * 700 * 3));
}

TEST(Resize, RejectsBadSizes) {
  const RgbImage src = random_image(8, 8, 5);
  EXPECT_THROW(resize_bicubic(src, 0, 8), Error);
  EXPECT_THROW(resize_bicubic(src, 8, -1), Error);
  EXPECT_THROW(resize_bicubic(src, kMaxResizeSide + 1, 1), Error);
  EXPECT_THROW(resize_bicubic(src, 1 << 15, 1 << 15), Error);
  RgbImage broken = src;
  broken.pixels.pop_back();
  EXPECT_THROW(resize_bicubic(broken, 4, 4), Error);
  EXPECT_THROW(resize_bicubic(RgbImage{}, 4, 4), Error);
}

}  // namespace
}  // namespace qvl
