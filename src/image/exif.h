// Finding the EXIF block in an image container and reading its orientation tag (0x0112).
// Everything is bounds-checked against the input; missing or malformed data means "no EXIF".
#pragma once

#include <cstddef>
#include <cstdint>

#include "image/decode.h"

namespace qvl {

struct ExifBlock {
  const uint8_t* data = nullptr;  // points into the caller's buffer; null when absent
  size_t size = 0;
};

// JPEG: first APP1 segment starting with "Exif\0\0" (before the first scan); PNG: eXIf chunk;
// WebP: EXIF chunk. GIF and BMP carry no EXIF.
ExifBlock find_exif_block(ImageFormat format, const uint8_t* data, size_t size);

// The orientation (1..8) stored in IFD0 of a TIFF-structured EXIF block ("II*\0" or "MM\0*",
// optionally preceded by "Exif\0\0"). Returns 1 when absent, malformed or out of range.
int parse_exif_orientation(const uint8_t* data, size_t size);

}  // namespace qvl
