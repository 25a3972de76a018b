// Internal: walks the marker segments of a JPEG header (SOI up to SOS), bounds-checked.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl::decode_detail {

struct JpegSegment {
  uint8_t marker;          // the byte after 0xFF (0xC0 = SOF0, 0xE1 = APP1, ...)
  const uint8_t* payload;  // bytes after the 2-byte length field
  size_t size;             // payload size
};

// Calls visit(segment) for each length-carrying segment before the first SOS; visit returns
// false to stop. Returns false when the data ends or breaks the marker syntax before SOS.
template <typename Visit>
bool for_each_jpeg_segment(const uint8_t* data, size_t size, Visit&& visit) {
  size_t pos = 2;  // after SOI
  while (pos + 2 <= size) {
    // Like libjpeg (and Pillow), skip stray bytes between segments up to the next 0xFF.
    while (pos < size && data[pos] != 0xFF) ++pos;
    if (pos + 2 > size) return false;
    while (pos + 1 < size && data[pos + 1] == 0xFF) ++pos;  // fill bytes
    if (pos + 2 > size) return false;
    const uint8_t marker = data[pos + 1];
    if (marker == 0xDA) return true;  // start of scan: header over
    if (marker == 0xD9 || marker == 0x00) return false;
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {  // no length field
      pos += 2;
      continue;
    }
    if (pos + 4 > size) return false;
    const size_t length = (size_t{data[pos + 2]} << 8) | data[pos + 3];
    if (length < 2 || length > size - pos - 2) return false;
    if (!visit(JpegSegment{marker, data + pos + 4, length - 2})) return true;
    pos += 2 + length;
  }
  return false;
}

}  // namespace qvl::decode_detail
