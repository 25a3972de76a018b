// Format sniffing, limit checks and dispatch to the per-format decoders.
#include "image/decode.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/mapped_file.h"
#include "image/decode_formats.h"
#include "image/exif.h"
#include "image/exif_orientation.h"

namespace qvl {
namespace {

constexpr const char* kSupported = "supported: JPEG, PNG, WebP, GIF, BMP";

// The magic is a string literal whose length comes from its type, so magics containing NUL bytes
// (TIFF, JPEG XL) compare all their bytes.
template <size_t N>
bool starts_with(const uint8_t* data, size_t size, const char (&magic)[N], size_t offset = 0) {
  constexpr size_t n = N - 1;
  return size >= offset + n && std::memcmp(data + offset, magic, n) == 0;
}

bool contains(const uint8_t* data, size_t size, std::string_view needle, size_t within) {
  const std::string_view text(reinterpret_cast<const char*>(data), std::min(size, within));
  return text.find(needle) != std::string_view::npos;
}

// The ISO base media "ftyp" box names its brand at offset 8: tells HEIC from AVIF.
std::string describe_iso_media(const uint8_t* data, size_t size) {
  if (starts_with(data, size, "avif", 8) || starts_with(data, size, "avis", 8)) return "AVIF";
  if (starts_with(data, size, "heic", 8) || starts_with(data, size, "heix", 8) ||
      starts_with(data, size, "heim", 8) || starts_with(data, size, "heis", 8) ||
      starts_with(data, size, "hevc", 8) || starts_with(data, size, "hevx", 8))
    return "HEIC";
  if (starts_with(data, size, "mif1", 8) || starts_with(data, size, "msf1", 8)) return "HEIF";
  if (starts_with(data, size, "qt  ", 8)) return "QuickTime video";
  return "ISO media (MP4/HEIF family)";
}

// Names the common formats we do not decode, so the error says what the file actually is.
std::string describe_unknown(const uint8_t* data, size_t size) {
  if (starts_with(data, size, "II*\0") || starts_with(data, size, "MM\0*")) return "TIFF";
  if (starts_with(data, size, "ftyp", 4)) return describe_iso_media(data, size);
  if (starts_with(data, size, "\xff\x0a") || starts_with(data, size, "\0\0\0\x0cJXL \r\n\x87\n"))
    return "JPEG XL";
  if (starts_with(data, size, "%PDF")) return "PDF";
  if (starts_with(data, size, "8BPS")) return "Photoshop PSD";
  if (starts_with(data, size, "\0\0\1\0")) return "ICO";
  if (starts_with(data, size, "qoif")) return "QOI";
  if (starts_with(data, size, "\x76\x2f\x31\x01")) return "OpenEXR";
  // SVG is text: a BOM, whitespace, an XML declaration or comments may precede the root element.
  if (contains(data, size, "<svg", 4096)) return "SVG";
  if (starts_with(data, size, "<?xml") || starts_with(data, size, "\xef\xbb\xbf<?xml"))
    return "XML";
  if (contains(data, size, "<html", 1024) || contains(data, size, "<!DOCTYPE html", 1024) ||
      contains(data, size, "<!doctype html", 1024))
    return "HTML";
  std::string hex;
  static const char* digits = "0123456789abcdef";
  for (size_t i = 0; i < size && i < 8; ++i) {
    if (i) hex += ' ';
    hex += digits[data[i] >> 4];
    hex += digits[data[i] & 15];
  }
  return "unrecognised data starting with bytes [" + hex + "]";
}

ImageFormat sniff_format(const uint8_t* data, size_t size) {
  if (starts_with(data, size, "\xff\xd8\xff")) return ImageFormat::kJpeg;
  if (starts_with(data, size, "\x89PNG\r\n\x1a\n")) return ImageFormat::kPng;
  if (starts_with(data, size, "RIFF") && starts_with(data, size, "WEBP", 8))
    return ImageFormat::kWebp;
  if (starts_with(data, size, "GIF87a") || starts_with(data, size, "GIF89a"))
    return ImageFormat::kGif;
  if (starts_with(data, size, "BM")) return ImageFormat::kBmp;
  fail(ErrorCode::kInvalidArgument,
       "unsupported image format: " + describe_unknown(data, size) + " (" + kSupported + ")");
}

}  // namespace

const char* image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kGif:
      return "GIF";
    case ImageFormat::kBmp:
      return "BMP";
  }
  return "unknown";
}

ImageInfo probe_image(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  if (data == nullptr || size == 0) fail(ErrorCode::kInvalidArgument, "image data is empty");
  if (size > limits.max_bytes) {
    fail(ErrorCode::kResourceExhausted, "image data is " + std::to_string(size) +
                                            " bytes, above the limit of " +
                                            std::to_string(limits.max_bytes));
  }
  ImageInfo info{sniff_format(data, size), 0, 0};
  switch (info.format) {
    case ImageFormat::kJpeg:
      decode_detail::probe_jpeg(data, size, info);
      break;
    case ImageFormat::kPng:
      decode_detail::probe_png(data, size, info);
      break;
    case ImageFormat::kWebp:
      decode_detail::probe_webp(data, size, info);
      break;
    case ImageFormat::kGif:
      decode_detail::probe_gif(data, size, info);
      break;
    case ImageFormat::kBmp:
      decode_detail::probe_bmp(data, size, info);
      break;
  }
  const char* name = image_format_name(info.format);
  if (info.width <= 0 || info.height <= 0) {
    fail(ErrorCode::kCorrupt, std::string(name) + " image has a zero size (" +
                                  std::to_string(info.width) + "x" + std::to_string(info.height) +
                                  ")");
  }
  const uint64_t pixels = uint64_t(info.width) * uint64_t(info.height);
  if (pixels > limits.max_pixels) {
    fail(ErrorCode::kResourceExhausted,
         std::string(name) + " image is " + std::to_string(info.width) + "x" +
             std::to_string(info.height) + " = " + std::to_string(pixels) +
             " pixels, above the limit of " + std::to_string(limits.max_pixels));
  }
  return info;
}

RgbImage decode_image(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  const ImageInfo info = probe_image(data, size, limits);
  RgbImage image;
  switch (info.format) {
    case ImageFormat::kJpeg:
      image = decode_detail::decode_jpeg(data, size, info);
      break;
    case ImageFormat::kPng:
      image = decode_detail::decode_png(data, size, info);
      break;
    case ImageFormat::kWebp:
      image = decode_detail::decode_webp(data, size, info);
      break;
    case ImageFormat::kGif:
      image = decode_detail::decode_gif(data, size, info);
      break;
    case ImageFormat::kBmp:
      image = decode_detail::decode_bmp(data, size, info);
      break;
  }
  QVL_CHECK(image.width == info.width && image.height == info.height &&
            image.pixels.size() == size_t(info.width) * size_t(info.height) * 3);
  const ExifBlock exif = find_exif_block(info.format, data, size);
  const int orientation = parse_exif_orientation(exif.data, exif.size);
  if (orientation != 1) image = apply_exif_orientation(image, orientation);
  return image;
}

RgbImage decode_image_file(const std::string& path, const DecodeLimits& limits) {
  // Mapping costs no memory; decode_image rejects oversized files before touching the bytes.
  const MappedFile file(path);
  try {
    return decode_image(file.data(), file.size(), limits);
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

namespace decode_detail {

RgbImage make_rgb_image(const ImageInfo& info) {
  RgbImage image;
  image.width = info.width;
  image.height = info.height;
  image.pixels.assign(size_t(info.width) * size_t(info.height) * 3, 0);
  return image;
}

void check_same_size(const ImageInfo& info, uint64_t width, uint64_t height) {
  if (width != uint64_t(info.width) || height != uint64_t(info.height)) {
    fail_corrupt(info.format, "decoder reports " + std::to_string(width) + "x" +
                                  std::to_string(height) + " but the header said " +
                                  std::to_string(info.width) + "x" + std::to_string(info.height));
  }
}

void rgba_to_rgb_over_white(const uint8_t* rgba, size_t pixel_count, uint8_t* rgb) {
  for (size_t i = 0; i < pixel_count; ++i) {
    const uint8_t a = rgba[4 * i + 3];
    for (int c = 0; c < 3; ++c) rgb[3 * i + c] = composite_over_white(rgba[4 * i + c], a);
  }
}

void fail_corrupt(ImageFormat format, const std::string& detail) {
  fail(ErrorCode::kCorrupt,
       std::string(image_format_name(format)) + " image is damaged: " + detail);
}

}  // namespace decode_detail
}  // namespace qvl
