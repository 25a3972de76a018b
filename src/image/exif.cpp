#include "image/exif.h"

#include <cstring>

#include "image/jpeg_segments.h"

namespace qvl {
namespace {

constexpr uint16_t kOrientationTag = 0x0112;
constexpr uint16_t kTypeShort = 3;
constexpr uint16_t kTypeLong = 4;

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
uint32_t read_le32(const uint8_t* p) {
  return (uint32_t{p[3]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[1]} << 8) | p[0];
}

bool has_exif_prefix(const uint8_t* data, size_t size) {
  return size >= 6 && std::memcmp(data, "Exif\0\0", 6) == 0;
}

ExifBlock find_in_jpeg(const uint8_t* data, size_t size) {
  ExifBlock found;
  decode_detail::for_each_jpeg_segment(data, size, [&](const decode_detail::JpegSegment& s) {
    if (s.marker == 0xE1 && has_exif_prefix(s.payload, s.size)) {
      found = {s.payload, s.size};
      return false;
    }
    return true;
  });
  return found;
}

// PNG chunks: 4-byte big-endian length, 4-byte type, data, 4-byte CRC.
ExifBlock find_in_png(const uint8_t* data, size_t size) {
  size_t pos = 8;
  while (pos + 12 <= size) {
    const size_t length = read_be32(data + pos);
    if (length > size - pos - 12) break;
    const uint8_t* type = data + pos + 4;
    if (std::memcmp(type, "eXIf", 4) == 0) return {data + pos + 8, length};
    if (std::memcmp(type, "IEND", 4) == 0) break;
    pos += 12 + length;
  }
  return {};
}

// RIFF chunks after "RIFF" size "WEBP": 4-byte tag, 4-byte little-endian size, data padded to even.
ExifBlock find_in_webp(const uint8_t* data, size_t size) {
  size_t pos = 12;
  while (pos + 8 <= size) {
    const size_t length = read_le32(data + pos + 4);
    if (length > size - pos - 8) break;
    if (std::memcmp(data + pos, "EXIF", 4) == 0) return {data + pos + 8, length};
    pos += 8 + length + (length & 1);
  }
  return {};
}

}  // namespace

ExifBlock find_exif_block(ImageFormat format, const uint8_t* data, size_t size) {
  switch (format) {
    case ImageFormat::kJpeg:
      return find_in_jpeg(data, size);
    case ImageFormat::kPng:
      return find_in_png(data, size);
    case ImageFormat::kWebp:
      return find_in_webp(data, size);
    case ImageFormat::kGif:
    case ImageFormat::kBmp:
      break;
  }
  return {};
}

int parse_exif_orientation(const uint8_t* data, size_t size) {
  if (data == nullptr) return 1;
  if (has_exif_prefix(data, size)) {
    data += 6;
    size -= 6;
  }
  if (size < 8) return 1;
  bool big_endian;
  if (std::memcmp(data, "II*\0", 4) == 0) {
    big_endian = false;
  } else if (std::memcmp(data, "MM\0*", 4) == 0) {
    big_endian = true;
  } else {
    return 1;
  }
  auto u16 = [&](size_t at) -> uint32_t {
    return big_endian ? (uint32_t{data[at]} << 8) | data[at + 1]
                      : (uint32_t{data[at + 1]} << 8) | data[at];
  };
  auto u32 = [&](size_t at) { return big_endian ? read_be32(data + at) : read_le32(data + at); };

  const size_t ifd = u32(4);
  if (ifd > size - 2) return 1;
  const size_t entries = u16(ifd);
  if (entries > (size - ifd - 2) / 12) return 1;
  for (size_t i = 0; i < entries; ++i) {
    const size_t entry = ifd + 2 + 12 * i;
    if (u16(entry) != kOrientationTag) continue;
    const uint32_t type = u16(entry + 2);
    if (u32(entry + 4) < 1) return 1;  // count
    uint32_t value;
    if (type == kTypeShort) {
      value = u16(entry + 8);  // values that fit in 4 bytes are stored inline, left-aligned
    } else if (type == kTypeLong) {
      value = u32(entry + 8);
    } else {
      return 1;
    }
    return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
  }
  return 1;
}

}  // namespace qvl
