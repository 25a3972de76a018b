// EXIF orientation: parsing the TIFF block, and the upright picture for all 8 orientations,
// checked against the EXIF specification's table rather than against the implementation.
#include <gtest/gtest.h>

#include <cstdlib>

#include "image/decode.h"
#include "image/decode_corpus.h"
#include "image/exif.h"
#include "image/exif_orientation.h"

namespace qvl {
namespace {

using test::Bytes;

enum Side { kTop, kBottom, kLeft, kRight };

// EXIF 2.3 table for tag 0x0112: where the stored 0th row and 0th column are in the picture
// as it should be viewed.
struct Placement {
  Side row0, column0;
};
constexpr Placement kSpec[9] = {{},
                                {kTop, kLeft},
                                {kTop, kRight},
                                {kBottom, kRight},
                                {kBottom, kLeft},
                                {kLeft, kTop},
                                {kRight, kTop},
                                {kRight, kBottom},
                                {kLeft, kBottom}};

// The upright picture, built from the table: stored (x, y) moves to the position given by which
// side its row and column index are counted from.
RgbImage upright_per_spec(const RgbImage& stored, int orientation) {
  const Placement p = kSpec[orientation];
  const bool rows_become_columns = p.row0 == kLeft || p.row0 == kRight;
  const int w = stored.width, h = stored.height;
  RgbImage out{rows_become_columns ? h : w, rows_become_columns ? w : h,
               Bytes(stored.pixels.size())};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      int ox, oy;
      if (!rows_become_columns) {
        oy = p.row0 == kTop ? y : h - 1 - y;
        ox = p.column0 == kLeft ? x : w - 1 - x;
      } else {
        ox = p.row0 == kLeft ? y : h - 1 - y;
        oy = p.column0 == kTop ? x : w - 1 - x;
      }
      for (int c = 0; c < 3; ++c) {
        out.pixels[(size_t(oy) * out.width + ox) * 3 + c] =
            stored.pixels[(size_t(y) * w + x) * 3 + c];
      }
    }
  }
  return out;
}

RgbImage numbered(int width, int height) {
  RgbImage image{width, height, Bytes(size_t(width) * height * 3)};
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = uint8_t(i * 7 + 1);
  return image;
}

TEST(ExifOrientation, TinyImageByHand) {
  // Stored 3x2 picture (one channel shown):  a b c / d e f.
  RgbImage stored{3, 2, {}};
  for (uint8_t v : {'a', 'b', 'c', 'd', 'e', 'f'}) stored.pixels.insert(stored.pixels.end(), 3, v);
  const char* expected[9] = {"",       "abcdef", "cbafed", "fedcba", "defabc",
                             "adbecf", "daebfc", "fcebda", "cfbead"};
  for (int o = 1; o <= 8; ++o) {
    const RgbImage out = apply_exif_orientation(stored, o);
    std::string got;
    for (size_t i = 0; i < out.pixels.size(); i += 3) got += char(out.pixels[i]);
    EXPECT_EQ(got, expected[o]) << "orientation " << o;
    EXPECT_EQ(out.width, o >= 5 ? 2 : 3);
  }
}

TEST(ExifOrientation, AllEightMatchTheSpecTable) {
  const RgbImage stored = numbered(7, 4);
  for (int o = 1; o <= 8; ++o) {
    const RgbImage want = upright_per_spec(stored, o);
    const RgbImage got = apply_exif_orientation(stored, o);
    EXPECT_EQ(got.width, want.width);
    EXPECT_EQ(got.pixels, want.pixels) << "orientation " << o;
  }
  EXPECT_EQ(apply_exif_orientation(stored, 0).pixels, stored.pixels);
  EXPECT_EQ(apply_exif_orientation(stored, 9).pixels, stored.pixels);
}

TEST(ExifParse, ReadsBothByteOrdersWithOrWithoutPrefix) {
  for (int o = 1; o <= 8; ++o) {
    for (bool big : {false, true}) {
      Bytes tiff = test::make_exif_tiff(o, big);
      EXPECT_EQ(parse_exif_orientation(tiff.data(), tiff.size()), o);
      Bytes prefixed = {'E', 'x', 'i', 'f', 0, 0};
      prefixed.insert(prefixed.end(), tiff.begin(), tiff.end());
      EXPECT_EQ(parse_exif_orientation(prefixed.data(), prefixed.size()), o);
    }
  }
}

TEST(ExifParse, MalformedBlocksMeanNoRotation) {
  const Bytes good = test::make_exif_tiff(6);
  EXPECT_EQ(parse_exif_orientation(nullptr, 0), 1);
  for (size_t n = 0; n < good.size(); ++n) {  // every truncation: in range or 1, never a crash
    const int o = parse_exif_orientation(good.data(), n);
    EXPECT_TRUE(o == 1 || o == 6);
  }
  Bytes bad_offset = good;
  bad_offset[4] = 0xF0;  // IFD0 past the end
  EXPECT_EQ(parse_exif_orientation(bad_offset.data(), bad_offset.size()), 1);
  Bytes many_entries = good;
  many_entries[8] = 0xFF;  // 255 entries claimed in a 1-entry block
  EXPECT_EQ(parse_exif_orientation(many_entries.data(), many_entries.size()), 1);
  Bytes wrong_type = good;
  wrong_type[12] = 2;  // ASCII
  EXPECT_EQ(parse_exif_orientation(wrong_type.data(), wrong_type.size()), 1);
  for (int value : {0, 9, 300}) {
    Bytes out_of_range = test::make_exif_tiff(value);
    EXPECT_EQ(parse_exif_orientation(out_of_range.data(), out_of_range.size()), 1);
  }
  Bytes bad_magic = good;
  bad_magic[2] = 43;
  EXPECT_EQ(parse_exif_orientation(bad_magic.data(), bad_magic.size()), 1);
}

// A colour that marks a stored corner, in 8x8 flat blocks so JPEG keeps them nearly exact.
RgbImage corner_marked(int width, int height) {
  RgbImage image{width, height, Bytes(size_t(width) * height * 3, 128)};
  const uint8_t colours[3][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
  const int corners[3][2] = {{0, 0}, {width - 8, 0}, {0, height - 8}};  // TL, TR, BL
  for (int k = 0; k < 3; ++k)
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 8; ++x)
        std::copy(colours[k], colours[k] + 3,
                  &image.pixels[(size_t(corners[k][1] + y) * width + corners[k][0] + x) * 3]);
  return image;
}

TEST(ExifDecode, JpegApp1OrientationIsAppliedForAllEight) {
  const RgbImage stored = corner_marked(40, 24);
  for (int o = 1; o <= 8; ++o) {
    const Bytes file = test::encode_jpeg(stored, {.quality = 95, .exif_orientation = o});
    const ImageInfo info = probe_image(file.data(), file.size(), {});
    EXPECT_EQ(info.width, 40);  // probe reports the stored size
    const RgbImage got = decode_image(file.data(), file.size());
    const RgbImage want = upright_per_spec(stored, o);
    ASSERT_EQ(got.width, want.width) << o;
    ASSERT_EQ(got.height, want.height) << o;
    int max_error = 0;
    for (size_t i = 0; i < want.pixels.size(); ++i)
      max_error = std::max(max_error, std::abs(int(got.pixels[i]) - int(want.pixels[i])));
    EXPECT_LT(max_error, 60) << "orientation " << o;  // a wrong mapping moves 255-valued blocks
  }
}

TEST(ExifDecode, PngExifChunkAndWebpExifChunkAreApplied) {
  const RgbImage stored = numbered(9, 5);
  for (int o : {3, 6, 8}) {
    const RgbImage want = upright_per_spec(stored, o);
    test::PngOptions options;
    options.exif = test::make_exif_tiff(o, true);
    const Bytes png = test::encode_png_rgb(stored, options);
    EXPECT_EQ(decode_image(png.data(), png.size()).pixels, want.pixels) << "PNG " << o;
    const Bytes webp = test::add_webp_exif(
        test::encode_webp(stored.pixels.data(), stored.width, stored.height, false, -1),
        stored.width, stored.height, test::make_exif_tiff(o));
    const RgbImage got = decode_image(webp.data(), webp.size());
    EXPECT_EQ(got.width, want.width) << "WebP " << o;
    EXPECT_EQ(got.pixels, want.pixels) << "WebP " << o;
  }
}

}  // namespace
}  // namespace qvl
