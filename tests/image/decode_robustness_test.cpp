// Damaged inputs: every corpus file truncated on a grid, with bits flipped at many positions
// (fixed seed) and with its width/height fields rewritten to lie. Each must either decode to a
// well-formed image within the limits or throw qvl::Error; anything else (a crash, a sanitizer
// report, another exception type) fails.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "base/error.h"
#include "image/decode.h"
#include "image/decode_corpus.h"
#include "image/decode_corpus_gif_bmp.h"

namespace qvl {
namespace {

using test::Bytes;

constexpr DecodeLimits kLimits{.max_bytes = 1 << 20, .max_pixels = 1 << 20};

// A header field holding a dimension: offset, byte count, byte order.
struct Field {
  size_t offset;
  int bytes;
  bool big_endian;
};

struct CorpusFile {
  std::string name;
  Bytes data;
  std::vector<Field> size_fields;
  bool png_ihdr = false;  // recompute the IHDR CRC after editing, so libpng reads the lie
};

uint32_t crc32(const uint8_t* p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

size_t find_jpeg_sof(const Bytes& b) {
  for (size_t i = 2; i + 9 < b.size(); ++i)
    if (b[i] == 0xFF && (b[i + 1] == 0xC0 || b[i + 1] == 0xC2)) return i;
  return 0;
}

size_t find_gif_descriptor(const Bytes& b) {
  size_t pos = 13 + ((b[10] & 0x80) ? 3u << ((b[10] & 7) + 1) : 0);
  while (pos < b.size() && b[pos] == 0x21) {
    pos += 2;
    while (pos < b.size() && b[pos] != 0) pos += 1 + b[pos];
    pos += 1;
  }
  return pos;
}

std::vector<CorpusFile> build_corpus() {
  const int w = 40, h = 24;
  const RgbImage image = test::make_test_image(w, h);
  Bytes rgba, indices;
  for (size_t i = 0; i < size_t(w) * h; ++i) {
    rgba.insert(rgba.end(), {image.pixels[3 * i], image.pixels[3 * i + 1], image.pixels[3 * i + 2],
                             uint8_t(i * 13)});
    indices.push_back(uint8_t(i % 16));
  }
  std::vector<GifColorType> gif_palette;
  Bytes bmp_palette;
  std::vector<png_color> png_palette;
  for (int i = 0; i < 16; ++i) {
    gif_palette.push_back({uint8_t(i * 16), uint8_t(i * 7), 99});
    bmp_palette.insert(bmp_palette.end(), {uint8_t(i), uint8_t(i * 9), 7});
    png_palette.push_back({uint8_t(i * 3), uint8_t(i * 15), 200});
  }
  Bytes packed_indices;  // 4-bit palette rows
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; x += 2)
      packed_indices.push_back(uint8_t(indices[y * w + x] << 4 | indices[y * w + x + 1]));

  std::vector<CorpusFile> corpus;
  auto add_jpeg = [&](const std::string& name, Bytes data) {
    const size_t sof = find_jpeg_sof(data);
    corpus.push_back({name, std::move(data), {{sof + 5, 2, true}, {sof + 7, 2, true}}});
  };
  add_jpeg("jpeg", test::encode_jpeg(image));
  add_jpeg("jpeg_progressive", test::encode_jpeg(image, {.progressive = true}));
  add_jpeg("jpeg_grey_exif", test::encode_jpeg(image, {.grey = true, .exif_orientation = 6}));
  Bytes cmyk(size_t(w) * h * 4, 0);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = uint8_t(i * 3);
  add_jpeg("jpeg_cmyk", test::encode_jpeg_samples(cmyk.data(), w, h, 4, JCS_CMYK, {}));

  auto add_png = [&](const std::string& name, Bytes data) {
    corpus.push_back({name, std::move(data), {{16, 4, true}, {20, 4, true}}, true});
  };
  add_png("png_rgb_exif", test::encode_png_rgb(image, {.exif = test::make_exif_tiff(8)}));
  add_png("png_rgba_interlaced",
          test::encode_png(w, h, rgba, {.color_type = PNG_COLOR_TYPE_RGBA, .interlaced = true}));
  test::PngOptions palette_options{.color_type = PNG_COLOR_TYPE_PALETTE, .bit_depth = 4};
  palette_options.palette = png_palette;
  palette_options.trns = {0, 128, 255, 7};
  add_png("png_palette_trns", test::encode_png(w, h, packed_indices, palette_options));

  const Bytes lossless = test::encode_webp(rgba.data(), w, h, true, -1);
  const Bytes lossy = test::encode_webp(image.pixels.data(), w, h, false, 80);
  corpus.push_back({"webp_lossless_alpha", lossless, {{21, 4, false}}});
  corpus.push_back({"webp_lossy", lossy, {{26, 2, false}, {28, 2, false}}});
  corpus.push_back({"webp_lossy_alpha",
                    test::encode_webp(rgba.data(), w, h, true, 80),
                    {{24, 3, false}, {27, 3, false}}});
  corpus.push_back({"webp_exif",
                    test::add_webp_exif(lossy, w, h, test::make_exif_tiff(5)),
                    {{24, 3, false}, {27, 3, false}}});

  for (bool interlaced : {false, true}) {
    Bytes gif = test::encode_gif(w, h, indices, gif_palette,
                                 {.interlaced = interlaced, .transparent_index = 3});
    const size_t d = find_gif_descriptor(gif);
    corpus.push_back({interlaced ? "gif_interlaced" : "gif",
                      gif,
                      {{6, 2, false}, {8, 2, false}, {d + 5, 2, false}, {d + 7, 2, false}}});
  }
  const std::vector<Field> bmp_fields = {{18, 4, false}, {22, 4, false}};
  corpus.push_back({"bmp24", test::encode_bmp(w, h, image.pixels, {.bits = 24}), bmp_fields});
  corpus.push_back({"bmp32_top_down",
                    test::encode_bmp(w, h, image.pixels, {.bits = 32, .top_down = true}),
                    bmp_fields});
  corpus.push_back({"bmp8",
                    test::encode_bmp(w, h, indices, {.bits = 8, .palette_bgr = bmp_palette}),
                    bmp_fields});
  return corpus;
}

// Decodes and checks the outcome; returns true when an image came out.
bool decode_must_not_misbehave(const Bytes& data, const std::string& what) {
  try {
    const RgbImage image = decode_image(data.data(), data.size(), kLimits);
    EXPECT_GT(image.width, 0) << what;
    EXPECT_GT(image.height, 0) << what;
    EXPECT_LE(uint64_t(image.width) * uint64_t(image.height), kLimits.max_pixels) << what;
    EXPECT_EQ(image.pixels.size(), size_t(image.width) * size_t(image.height) * 3) << what;
    return true;
  } catch (const Error&) {
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": unexpected exception " << e.what();
    return false;
  }
}

TEST(DecodeRobustness, CorpusDecodesIntact) {
  for (const CorpusFile& f : build_corpus()) {
    EXPECT_TRUE(decode_must_not_misbehave(f.data, f.name)) << f.name;
  }
}

TEST(DecodeRobustness, TruncationAtEveryGridPoint) {
  for (const CorpusFile& f : build_corpus()) {
    const size_t n = f.data.size();
    std::vector<size_t> lengths;
    for (size_t len = 0; len < n; len += std::max<size_t>(1, n / 64)) lengths.push_back(len);
    for (size_t k = 1; k <= 16 && k <= n; ++k) lengths.push_back(n - k);
    for (size_t len = 0; len < std::min<size_t>(n, 64); ++len) lengths.push_back(len);
    for (size_t len : lengths) {
      const Bytes cut(f.data.begin(), f.data.begin() + len);
      decode_must_not_misbehave(cut, f.name + " truncated to " + std::to_string(len));
    }
  }
}

TEST(DecodeRobustness, BitFlipsAndByteSmashes) {
  std::mt19937 rng(20240611);
  for (const CorpusFile& f : build_corpus()) {
    const size_t n = f.data.size();
    for (int trial = 0; trial < 240; ++trial) {
      Bytes damaged = f.data;
      // Half the damage lands in the first 100 bytes, where headers live.
      const size_t span = trial % 2 ? std::min<size_t>(n, 100) : n;
      const size_t at = rng() % span;
      if (trial % 3 == 0) {
        for (size_t k = 0; k < 4 && at + k < n; ++k) damaged[at + k] = uint8_t(rng());
      } else {
        damaged[at] ^= uint8_t(1u << (rng() % 8));
      }
      decode_must_not_misbehave(damaged, f.name + " damaged at " + std::to_string(at));
    }
  }
}

void write_field(Bytes& data, const Field& field, uint64_t value) {
  for (int i = 0; i < field.bytes; ++i) {
    const int shift = 8 * (field.big_endian ? field.bytes - 1 - i : i);
    data[field.offset + i] = uint8_t(value >> shift);
  }
}

TEST(DecodeRobustness, LyingWidthAndHeightFields) {
  for (const CorpusFile& f : build_corpus()) {
    for (const Field& field : f.size_fields) {
      ASSERT_LE(field.offset + field.bytes, f.data.size()) << f.name;
      const uint64_t all_ones = (uint64_t{1} << (8 * field.bytes)) - 1;
      uint64_t original = 0;
      for (int i = 0; i < field.bytes; ++i) {
        original |= uint64_t{f.data[field.offset + i]}
                    << (8 * (field.big_endian ? field.bytes - 1 - i : i));
      }
      for (uint64_t value : {uint64_t{0}, uint64_t{1}, all_ones, all_ones >> 1, all_ones / 3,
                             original + 1, original - 1, original * 2, original * 40}) {
        Bytes lying = f.data;
        write_field(lying, field, value & all_ones);
        if (f.png_ihdr) {
          const uint32_t crc = crc32(&lying[12], 17);
          write_field(lying, {29, 4, true}, crc);
        }
        decode_must_not_misbehave(lying, f.name + " field at " + std::to_string(field.offset) +
                                             " = " + std::to_string(value & all_ones));
      }
    }
  }
}

TEST(DecodeRobustness, HugeDeclaredSizesAreRefusedBeforeAllocation) {
  // 65535 x 65535 JPEG header and 2^31-1 square PNG: rejected by the default pixel limit.
  for (const CorpusFile& f : build_corpus()) {
    if (f.name != "jpeg" && f.name != "png_rgb_exif") continue;
    Bytes lying = f.data;
    for (const Field& field : f.size_fields)
      write_field(lying, field, f.png_ihdr ? 0x7FFFFFFF : 0xFFFF);
    if (f.png_ihdr) write_field(lying, {29, 4, true}, crc32(&lying[12], 17));
    try {
      decode_image(lying.data(), lying.size());
      ADD_FAILURE() << f.name << " decoded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << f.name << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace qvl
