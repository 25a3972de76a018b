// PNG, WebP, GIF and BMP variants (exact where the format is lossless), plus limits and errors.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "base/error.h"
#include "image/decode.h"
#include "image/decode_corpus.h"
#include "image/decode_corpus_gif_bmp.h"

namespace qvl {
namespace {

using test::Bytes;

constexpr int kW = 23, kH = 13;  // odd sizes exercise row padding and partial bytes

RgbImage decode(const Bytes& bytes, const DecodeLimits& limits = {}) {
  return decode_image(bytes.data(), bytes.size(), limits);
}

ErrorCode error_code_of(const Bytes& bytes, const DecodeLimits& limits = {}) {
  try {
    decode(bytes, limits);
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "decode unexpectedly succeeded";
  return ErrorCode::kInternal;
}

// Expected output built pixel by pixel from a function (x, y) -> {r, g, b}.
template <typename F>
RgbImage expected_image(int width, int height, F&& rgb_at) {
  RgbImage image{width, height, Bytes(size_t(width) * height * 3)};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const std::array<uint8_t, 3> p = rgb_at(x, y);
      std::copy(p.begin(), p.end(), &image.pixels[(size_t(y) * width + x) * 3]);
    }
  }
  return image;
}

uint8_t sample(int x, int y, int c) {
  return uint8_t((x * 29 + y * 53 + c * 101) % 256);
}
uint8_t alpha(int x, int y) {
  return uint8_t((x * 37 + y * 11) % 256);
}
uint8_t over(uint8_t c, uint8_t a) {  // the alpha rule as specified (see DecodeAlpha tests)
  return uint8_t(std::lround(c * a / 255.0 + 255.0 * (1.0 - a / 255.0)));
}

// Packs values of `depth` bits (1, 2, 4, 8 or 16 big-endian) into PNG rows.
Bytes pack_rows(const std::vector<int>& values, int samples_per_row, int rows, int depth) {
  const size_t row_bytes = (size_t(samples_per_row) * depth + 7) / 8;
  Bytes out(row_bytes * rows, 0);
  for (int y = 0; y < rows; ++y) {
    for (int i = 0; i < samples_per_row; ++i) {
      const int v = values[size_t(y) * samples_per_row + i];
      uint8_t* row = &out[y * row_bytes];
      if (depth == 16) {
        row[2 * i] = uint8_t(v >> 8);
        row[2 * i + 1] = uint8_t(v);
      } else {
        const size_t bit = size_t(i) * depth;
        row[bit / 8] |= uint8_t(v << (8 - depth - bit % 8));
      }
    }
  }
  return out;
}

TEST(DecodePng, Rgb8AndInterlacedRgb8AreExact) {
  const RgbImage want = expected_image(kW, kH, [](int x, int y) {
    return std::array<uint8_t, 3>{sample(x, y, 0), sample(x, y, 1), sample(x, y, 2)};
  });
  EXPECT_EQ(decode(test::encode_png_rgb(want)).pixels, want.pixels);
  EXPECT_EQ(decode(test::encode_png_rgb(want, {.interlaced = true})).pixels, want.pixels);
}

TEST(DecodePng, SixteenBitKeepsTheHighByte) {
  std::vector<int> values;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x)
      for (int c = 0; c < 3; ++c) values.push_back(sample(x, y, c) << 8 | ((x * 7 + c) & 0xFF));
  const Bytes file = test::encode_png(kW, kH, pack_rows(values, kW * 3, kH, 16),
                                      {.color_type = PNG_COLOR_TYPE_RGB, .bit_depth = 16});
  const RgbImage want = expected_image(kW, kH, [](int x, int y) {
    return std::array<uint8_t, 3>{sample(x, y, 0), sample(x, y, 1), sample(x, y, 2)};
  });
  EXPECT_EQ(decode(file).pixels, want.pixels);
}

TEST(DecodePng, GreyAtEveryBitDepthIsScaledToFullRange) {
  for (int depth : {1, 2, 4, 8, 16}) {
    const int max = (1 << depth) - 1;
    std::vector<int> values;
    for (int y = 0; y < kH; ++y)
      for (int x = 0; x < kW; ++x) values.push_back((x * 3 + y * 5) % (max + 1));
    for (bool interlaced : {false, true}) {
      const Bytes file = test::encode_png(
          kW, kH, pack_rows(values, kW, kH, depth),
          {.color_type = PNG_COLOR_TYPE_GRAY, .bit_depth = depth, .interlaced = interlaced});
      const RgbImage want = expected_image(kW, kH, [&](int x, int y) {
        const int v = values[size_t(y) * kW + x];
        const uint8_t g = depth == 16 ? uint8_t(v >> 8) : uint8_t(v * 255 / max);
        return std::array<uint8_t, 3>{g, g, g};
      });
      EXPECT_EQ(decode(file).pixels, want.pixels) << "depth " << depth;
    }
  }
}

TEST(DecodePng, AlphaIsCompositedOverWhite) {
  std::vector<int> ga, rgba, rgba16;
  for (int y = 0; y < kH; ++y) {
    for (int x = 0; x < kW; ++x) {
      ga.insert(ga.end(), {sample(x, y, 0), alpha(x, y)});
      rgba.insert(rgba.end(), {sample(x, y, 0), sample(x, y, 1), sample(x, y, 2), alpha(x, y)});
      for (int c = 0; c < 4; ++c) rgba16.push_back(rgba[rgba.size() - 4 + c] << 8 | 0x5A);
    }
  }
  const RgbImage want_ga = expected_image(kW, kH, [](int x, int y) {
    const uint8_t g = over(sample(x, y, 0), alpha(x, y));
    return std::array<uint8_t, 3>{g, g, g};
  });
  const RgbImage want_rgba = expected_image(kW, kH, [](int x, int y) {
    const uint8_t a = alpha(x, y);
    return std::array<uint8_t, 3>{over(sample(x, y, 0), a), over(sample(x, y, 1), a),
                                  over(sample(x, y, 2), a)};
  });
  EXPECT_EQ(decode(test::encode_png(kW, kH, pack_rows(ga, kW * 2, kH, 8),
                                    {.color_type = PNG_COLOR_TYPE_GRAY_ALPHA}))
                .pixels,
            want_ga.pixels);
  EXPECT_EQ(decode(test::encode_png(kW, kH, pack_rows(rgba, kW * 4, kH, 8),
                                    {.color_type = PNG_COLOR_TYPE_RGBA, .interlaced = true}))
                .pixels,
            want_rgba.pixels);
  EXPECT_EQ(decode(test::encode_png(kW, kH, pack_rows(rgba16, kW * 4, kH, 16),
                                    {.color_type = PNG_COLOR_TYPE_RGBA, .bit_depth = 16}))
                .pixels,
            want_rgba.pixels);
}

TEST(DecodePng, PaletteWithAndWithoutTransparency) {
  std::vector<png_color> palette;
  Bytes palette_alpha;
  for (int i = 0; i < 16; ++i) {
    palette.push_back(png_color{uint8_t(i * 16), uint8_t(255 - i * 9), uint8_t(i * i)});
    palette_alpha.push_back(uint8_t(i * 17));
  }
  palette_alpha.resize(10);  // entries past the tRNS list are opaque
  std::vector<int> indices;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) indices.push_back((x + 3 * y) % 16);
  for (int depth : {4, 8}) {
    for (bool transparent : {false, true}) {
      test::PngOptions options{.color_type = PNG_COLOR_TYPE_PALETTE, .bit_depth = depth};
      options.palette = palette;
      if (transparent) options.trns = palette_alpha;
      const Bytes file = test::encode_png(kW, kH, pack_rows(indices, kW, kH, depth), options);
      const RgbImage want = expected_image(kW, kH, [&](int x, int y) {
        const int i = indices[size_t(y) * kW + x];
        const uint8_t a = transparent && i < 10 ? palette_alpha[i] : 255;
        return std::array<uint8_t, 3>{over(palette[i].red, a), over(palette[i].green, a),
                                      over(palette[i].blue, a)};
      });
      EXPECT_EQ(decode(file).pixels, want.pixels) << "depth " << depth << " tRNS " << transparent;
    }
  }
}

TEST(DecodePng, ColourKeyTransparencyBecomesWhite) {
  std::vector<int> grey;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) grey.push_back((x * 11 + y) % 100);
  test::PngOptions options{.color_type = PNG_COLOR_TYPE_GRAY};
  options.trns = {1};  // marks "use the key"
  options.trns_key.gray = 42;
  const RgbImage decoded = decode(test::encode_png(kW, kH, pack_rows(grey, kW, kH, 8), options));
  const RgbImage want = expected_image(kW, kH, [&](int x, int y) {
    const int g = grey[size_t(y) * kW + x];
    const uint8_t v = g == 42 ? 255 : uint8_t(g);
    return std::array<uint8_t, 3>{v, v, v};
  });
  EXPECT_EQ(decoded.pixels, want.pixels);
}

TEST(DecodeWebp, LosslessIsExactAndLossyIsClose) {
  const RgbImage source = test::make_test_image(kW, kH);
  Bytes rgba;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) {
      const uint8_t* p = &source.pixels[(size_t(y) * kW + x) * 3];
      rgba.insert(rgba.end(), {p[0], p[1], p[2], alpha(x, y)});
    }
  const RgbImage want_alpha = expected_image(kW, kH, [&](int x, int y) {
    const uint8_t* p = &source.pixels[(size_t(y) * kW + x) * 3];
    return std::array<uint8_t, 3>{over(p[0], alpha(x, y)), over(p[1], alpha(x, y)),
                                  over(p[2], alpha(x, y))};
  });
  EXPECT_EQ(decode(test::encode_webp(source.pixels.data(), kW, kH, false, -1)).pixels,
            source.pixels);
  EXPECT_EQ(decode(test::encode_webp(rgba.data(), kW, kH, true, -1)).pixels, want_alpha.pixels);
  for (bool with_alpha : {false, true}) {
    const RgbImage lossy =
        decode(with_alpha ? test::encode_webp(rgba.data(), kW, kH, true, 95)
                          : test::encode_webp(source.pixels.data(), kW, kH, false, 95));
    const Bytes& want = with_alpha ? want_alpha.pixels : source.pixels;
    ASSERT_EQ(lossy.pixels.size(), want.size());
    double error = 0;
    for (size_t i = 0; i < want.size(); ++i) error += std::abs(int(lossy.pixels[i]) - want[i]);
    EXPECT_LT(error / double(want.size()), 8.0) << "alpha " << with_alpha;
  }
}

std::vector<GifColorType> gif_palette() {
  std::vector<GifColorType> palette;
  for (int i = 0; i < 50; ++i)
    palette.push_back({uint8_t(i * 5), uint8_t(250 - i * 3), uint8_t(i * 41)});
  return palette;
}

Bytes gif_indices(int width, int height) {
  Bytes indices;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) indices.push_back(uint8_t((x * 3 + y * 7) % 50));
  return indices;
}

TEST(DecodeGif, FramesPlainInterlacedAndTransparent) {
  const auto palette = gif_palette();
  const int height = 21;  // hits every interlace pass
  const Bytes indices = gif_indices(kW, height);
  for (bool interlaced : {false, true}) {
    for (int transparent : {-1, 7}) {
      const Bytes file =
          test::encode_gif(kW, height, indices, palette,
                           {.interlaced = interlaced, .transparent_index = transparent});
      const RgbImage want = expected_image(kW, height, [&](int x, int y) {
        const int i = indices[size_t(y) * kW + x];
        if (i == transparent) return std::array<uint8_t, 3>{255, 255, 255};
        return std::array<uint8_t, 3>{palette[i].Red, palette[i].Green, palette[i].Blue};
      });
      EXPECT_EQ(decode(file).pixels, want.pixels) << interlaced << " " << transparent;
    }
  }
}

TEST(DecodeGif, FrameIsPlacedOnTheScreenAndTheScreenGrowsToHoldIt) {
  const auto palette = gif_palette();
  const Bytes indices = gif_indices(8, 5);
  const Bytes inside = test::encode_gif(
      8, 5, indices, palette, {.screen_width = 20, .screen_height = 10, .left = 3, .top = 2});
  const Bytes past = test::encode_gif(8, 5, indices, palette,
                                      {.screen_width = 6, .screen_height = 4, .left = 3, .top = 2});
  for (const Bytes* file : {&inside, &past}) {
    const RgbImage image = decode(*file);
    const int w = file == &inside ? 20 : 11, h = file == &inside ? 10 : 7;
    ASSERT_EQ(image.width, w);
    ASSERT_EQ(image.height, h);
    const RgbImage want = expected_image(w, h, [&](int x, int y) {
      if (x < 3 || y < 2 || x >= 11 || y >= 7) return std::array<uint8_t, 3>{255, 255, 255};
      const GifColorType c = palette[indices[size_t(y - 2) * 8 + (x - 3)]];
      return std::array<uint8_t, 3>{c.Red, c.Green, c.Blue};
    });
    EXPECT_EQ(image.pixels, want.pixels);
  }
}

TEST(DecodeBmp, TwentyFourAndThirtyTwoBitBothRowOrders) {
  const RgbImage want = expected_image(kW, kH, [](int x, int y) {
    return std::array<uint8_t, 3>{sample(x, y, 0), sample(x, y, 1), sample(x, y, 2)};
  });
  for (int bits : {24, 32}) {
    for (bool top_down : {false, true}) {
      const Bytes file =
          test::encode_bmp(kW, kH, want.pixels, {.bits = bits, .top_down = top_down});
      EXPECT_EQ(decode(file).pixels, want.pixels) << bits << " top_down " << top_down;
    }
  }
}

TEST(DecodeBmp, V5BitfieldsWithAlphaMaskIsCompositedOverWhite) {
  const RgbImage colours = expected_image(kW, kH, [](int x, int y) {
    return std::array<uint8_t, 3>{sample(x, y, 0), sample(x, y, 1), sample(x, y, 2)};
  });
  Bytes alphas;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) alphas.push_back(alpha(x, y));
  const Bytes file = test::encode_bmp(kW, kH, colours.pixels, {.bits = 32, .alpha = alphas});
  const RgbImage want = expected_image(kW, kH, [](int x, int y) {
    const uint8_t a = alpha(x, y);
    return std::array<uint8_t, 3>{over(sample(x, y, 0), a), over(sample(x, y, 1), a),
                                  over(sample(x, y, 2), a)};
  });
  EXPECT_EQ(decode(file).pixels, want.pixels);
}

TEST(DecodeBmp, EightBitPalette) {
  Bytes palette, indices;
  for (int i = 0; i < 40; ++i) palette.insert(palette.end(), {uint8_t(i), uint8_t(i * 6), 200});
  for (int i = 0; i < kW * kH; ++i) indices.push_back(uint8_t(i % 40));
  const Bytes file = test::encode_bmp(kW, kH, indices, {.bits = 8, .palette_bgr = palette});
  const RgbImage want = expected_image(kW, kH, [&](int x, int y) {
    const int i = indices[size_t(y) * kW + x];
    return std::array<uint8_t, 3>{200, uint8_t(i * 6), uint8_t(i)};  // stored B, G, R
  });
  EXPECT_EQ(decode(file).pixels, want.pixels);
}

TEST(DecodeBmp, CompressedAndSixteenBitVariantsAreRefusedClearly) {
  const RgbImage source = test::make_test_image(kW, kH);
  Bytes rle = test::encode_bmp(kW, kH, source.pixels, {.bits = 24});
  rle[30] = 1;  // BI_RLE8
  EXPECT_EQ(error_code_of(rle), ErrorCode::kUnsupported);
  Bytes sixteen = test::encode_bmp(kW, kH, source.pixels, {.bits = 24});
  sixteen[28] = 16;
  EXPECT_EQ(error_code_of(sixteen), ErrorCode::kUnsupported);
  Bytes short_file = test::encode_bmp(kW, kH, source.pixels, {.bits = 24});
  short_file.resize(short_file.size() - 10);
  EXPECT_EQ(error_code_of(short_file), ErrorCode::kCorrupt);
}

TEST(DecodeErrors, EmptyAndUnknownFormatsNameTheSupportedOnes) {
  EXPECT_EQ(error_code_of({}), ErrorCode::kInvalidArgument);
  const Bytes text = {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};
  EXPECT_EQ(error_code_of(text), ErrorCode::kInvalidArgument);
  try {
    decode(Bytes{'I', 'I', '*', 0, 8, 0, 0, 0});
    FAIL() << "TIFF accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TIFF"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("supported: JPEG, PNG, WebP, GIF, BMP"),
              std::string::npos);
  }
}

TEST(DecodeErrors, LimitsAreCheckedBeforeDecodingForEveryFormat) {
  const RgbImage source = test::make_test_image(kW, kH);
  const uint64_t pixels = kW * kH;
  const std::vector<Bytes> files = {test::encode_jpeg(source), test::encode_png_rgb(source),
                                    test::encode_webp(source.pixels.data(), kW, kH, false, -1),
                                    test::encode_gif(kW, kH, gif_indices(kW, kH), gif_palette()),
                                    test::encode_bmp(kW, kH, source.pixels, {.bits = 24})};
  const ImageFormat formats[] = {ImageFormat::kJpeg, ImageFormat::kPng, ImageFormat::kWebp,
                                 ImageFormat::kGif, ImageFormat::kBmp};
  for (size_t i = 0; i < files.size(); ++i) {
    const Bytes& f = files[i];
    const ImageInfo info = probe_image(f.data(), f.size(), {});
    EXPECT_EQ(info.format, formats[i]);
    EXPECT_EQ(info.width, kW);
    EXPECT_EQ(info.height, kH);
    EXPECT_EQ(error_code_of(f, {.max_pixels = pixels - 1}), ErrorCode::kResourceExhausted) << i;
    EXPECT_EQ(decode(f, {.max_pixels = pixels}).width, kW);
    EXPECT_EQ(error_code_of(f, {.max_bytes = f.size() - 1}), ErrorCode::kResourceExhausted);
    EXPECT_EQ(decode(f, {.max_bytes = f.size()}).height, kH);
  }
}

TEST(DecodeErrors, ZeroSizeHeadersAreCorrupt) {
  const RgbImage source = test::make_test_image(kW, kH);
  Bytes png = test::encode_png_rgb(source);
  png[16] = png[17] = png[18] = png[19] = 0;  // IHDR width
  EXPECT_EQ(error_code_of(png), ErrorCode::kCorrupt);
  Bytes gif = test::encode_gif(kW, kH, gif_indices(kW, kH), gif_palette());
  for (size_t i = 6; i < 10; ++i) gif[i] = 0;  // screen size; the frame still has a size
  EXPECT_EQ(decode(gif).width, kW);
  Bytes bmp = test::encode_bmp(kW, kH, source.pixels, {.bits = 24});
  bmp[22] = bmp[23] = bmp[24] = bmp[25] = 0;  // height
  EXPECT_EQ(error_code_of(bmp), ErrorCode::kCorrupt);
}

TEST(DecodeFile, MissingAndOversizedFiles) {
  try {
    decode_image_file("/nonexistent/qvl/picture.png");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  const Bytes png = test::encode_png_rgb(test::make_test_image(kW, kH));
  const std::string path = testing::TempDir() + "/qvl_decode_test.png";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(png.data()), std::streamsize(png.size()));
  EXPECT_EQ(decode_image_file(path).width, kW);
  try {
    decode_image_file(path, {.max_bytes = 100});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace qvl
