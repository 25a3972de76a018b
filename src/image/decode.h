// Safe decoding of untrusted image bytes (JPEG, PNG, WebP, GIF, BMP) into 8-bit RGB.
//
// Every input is sniffed by its magic bytes and its header is read before any pixel memory is
// allocated, so size limits are enforced up front. The result is what the model sees: EXIF
// orientation applied, alpha composited over white, CMYK converted, 16-bit samples reduced to
// their high byte, GIF frame 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "image/rgb_image.h"

namespace qvl {

struct DecodeLimits {
  size_t max_bytes = size_t{64} << 20;  // size of the encoded input
  uint64_t max_pixels = 50'000'000;     // width * height as stored in the header
};

enum class ImageFormat { kJpeg, kPng, kWebp, kGif, kBmp };

const char* image_format_name(ImageFormat format);

struct ImageInfo {
  ImageFormat format;
  int width;  // as stored, before EXIF orientation (orientations 5..8 swap them on decode)
  int height;
};

// Reads only the format signature and the header. Throws qvl::Error:
//   kInvalidArgument   empty input or an unknown format (the message lists the supported ones)
//   kResourceExhausted input larger than max_bytes, or width * height above max_pixels
//   kCorrupt           damaged or truncated header, zero width or height
//   kUnsupported       a known format in a variant qvl does not decode (animated WebP, RLE BMP)
ImageInfo probe_image(const uint8_t* data, size_t size, const DecodeLimits& limits);

// Full decode (probe_image first, then the codec, then EXIF orientation). Same errors as
// probe_image, plus kCorrupt for damaged pixel data. A truncated file either throws or yields a
// partially decoded image (JPEG fills the missing part, as libjpeg does); it never crashes.
RgbImage decode_image(const uint8_t* data, size_t size, const DecodeLimits& limits = {});

// decode_image on a file's contents; kNotFound / kIo for files that cannot be read. The file size
// is checked against max_bytes before anything is read.
RgbImage decode_image_file(const std::string& path, const DecodeLimits& limits = {});

// The alpha rule used for every alpha-bearing input: straight (non-premultiplied) colour c with
// alpha a over a white background, round(c*a/255 + 255*(1 - a/255)), computed exactly in integers.
inline uint8_t composite_over_white(uint8_t c, uint8_t a) {
  // The exact value is (c*a + 255*(255-a)) / 255; it is never exactly halfway (255 is odd), so
  // adding 127 before the integer division rounds to nearest.
  return static_cast<uint8_t>((unsigned{c} * a + 255u * (255u - a) + 127u) / 255u);
}

}  // namespace qvl
