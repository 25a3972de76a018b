// BMP, parsed by hand: uncompressed 1/4/8-bit palette, 24-bit and 32-bit images, bottom-up or
// top-down, with the Windows 3 (40-byte), V4/V5 (108/124-byte) or OS/2 core (12-byte) header.
// 32-bit BI_BITFIELDS is accepted only with the standard byte masks. Every offset and size is
// checked against the buffer before it is used; RLE, JPEG/PNG-in-BMP and 16-bit are refused.
#include <cstring>
#include <string>

#include "base/error.h"
#include "image/decode_formats.h"

namespace qvl::decode_detail {
namespace {

constexpr size_t kFileHeaderSize = 14;
constexpr uint32_t kBiRgb = 0, kBiBitfields = 3;

uint32_t le16(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8);
}
uint32_t le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

struct BmpLayout {
  uint32_t width = 0;
  uint32_t height = 0;
  bool top_down = false;
  uint32_t bits = 0;
  bool has_alpha = false;  // 32-bit with an explicit alpha mask
  const uint8_t* palette = nullptr;
  uint32_t palette_size = 0;   // entries
  uint32_t palette_entry = 4;  // bytes per entry (3 for OS/2 core headers)
  size_t pixel_offset = 0;
  size_t stride = 0;  // bytes per row, padded to 4
};

[[noreturn]] void corrupt(const std::string& detail) {
  fail_corrupt(ImageFormat::kBmp, detail);
}

[[noreturn]] void unsupported(const std::string& detail) {
  fail(ErrorCode::kUnsupported,
       "BMP variant not supported: " + detail + " (supported: uncompressed 1/4/8/24/32-bit)");
}

// Reads and validates the headers; with check_pixels, also that the pixel rows are present.
BmpLayout parse_layout(const uint8_t* data, size_t size, bool check_pixels) {
  if (size < kFileHeaderSize + 12) corrupt("file is truncated in the header");
  BmpLayout layout;
  const size_t header_size = le32(data + 14);
  if (header_size > size - kFileHeaderSize) corrupt("file is truncated in the header");
  const uint8_t* h = data + kFileHeaderSize;
  uint32_t compression = kBiRgb, colors_used = 0;
  if (header_size == 12) {  // OS/2 BITMAPCOREHEADER: 16-bit unsigned sizes, RGB triples
    layout.width = le16(h + 4);
    layout.height = le16(h + 6);
    layout.bits = le16(h + 10);
    layout.palette_entry = 3;
  } else if (header_size == 40 || header_size == 52 || header_size == 56 || header_size == 108 ||
             header_size == 124) {
    const int32_t width = static_cast<int32_t>(le32(h + 4));
    const int32_t height = static_cast<int32_t>(le32(h + 8));
    if (width < 0) corrupt("negative width");
    if (height == INT32_MIN) corrupt("invalid height");
    layout.width = static_cast<uint32_t>(width);
    layout.top_down = height < 0;
    layout.height = static_cast<uint32_t>(height < 0 ? -height : height);
    layout.bits = le16(h + 14);
    compression = le32(h + 16);
    colors_used = le32(h + 32);
  } else {
    unsupported("header size " + std::to_string(header_size));
  }

  size_t palette_offset = kFileHeaderSize + header_size;
  if (compression == kBiBitfields) {
    // The masks follow a 40-byte header and sit inside the larger ones, at file offset 54.
    if (layout.bits != 32) unsupported("bit fields with " + std::to_string(layout.bits) + " bits");
    if (size < 54 + 12) corrupt("file is truncated in the colour masks");
    if (le32(data + 54) != 0x00FF0000 || le32(data + 58) != 0x0000FF00 ||
        le32(data + 62) != 0x000000FF) {
      unsupported("non-standard colour masks");
    }
    if (header_size >= 56) layout.has_alpha = le32(data + 66) == 0xFF000000u;
    if (header_size == 40) palette_offset += 12;
  } else if (compression != kBiRgb) {
    unsupported("compression type " + std::to_string(compression));
  }

  switch (layout.bits) {
    case 1:
    case 4:
    case 8: {
      const uint32_t max_colors = 1u << layout.bits;
      layout.palette_size = colors_used == 0 || colors_used > max_colors ? max_colors : colors_used;
      const size_t palette_bytes = size_t{layout.palette_size} * layout.palette_entry;
      if (palette_offset > size || palette_bytes > size - palette_offset) {
        corrupt("palette is outside the file");
      }
      layout.palette = data + palette_offset;
      break;
    }
    case 24:
    case 32:
      break;
    case 16:
      unsupported("16 bits per pixel");
    default:
      corrupt(std::to_string(layout.bits) + " bits per pixel");
  }

  layout.pixel_offset = le32(data + 10);
  layout.stride = ((uint64_t{layout.bits} * layout.width + 31) / 32) * 4;
  if (check_pixels) {
    const uint64_t pixel_bytes = uint64_t{layout.stride} * layout.height;
    if (layout.pixel_offset > size || pixel_bytes > size - layout.pixel_offset) {
      corrupt("pixel data is truncated or outside the file");
    }
  }
  return layout;
}

}  // namespace

void probe_bmp(const uint8_t* data, size_t size, ImageInfo& info) {
  const BmpLayout layout = parse_layout(data, size, /*check_pixels=*/false);
  if (layout.width > 0x7fffffffu || layout.height > 0x7fffffffu) corrupt("size is too large");
  info.width = static_cast<int>(layout.width);
  info.height = static_cast<int>(layout.height);
}

RgbImage decode_bmp(const uint8_t* data, size_t size, const ImageInfo& info) {
  const BmpLayout layout = parse_layout(data, size, /*check_pixels=*/true);
  check_same_size(info, layout.width, layout.height);
  RgbImage out = make_rgb_image(info);
  const size_t width = layout.width;
  for (size_t y = 0; y < layout.height; ++y) {
    const size_t stored_row = layout.top_down ? y : layout.height - 1 - y;
    const uint8_t* src = data + layout.pixel_offset + stored_row * layout.stride;
    uint8_t* dst = out.pixels.data() + y * width * 3;
    for (size_t x = 0; x < width; ++x, dst += 3) {
      if (layout.bits == 24 || layout.bits == 32) {
        const uint8_t* p = src + x * (layout.bits / 8);  // stored B, G, R (, A or unused)
        const uint8_t alpha = layout.has_alpha ? p[3] : 255;
        dst[0] = composite_over_white(p[2], alpha);
        dst[1] = composite_over_white(p[1], alpha);
        dst[2] = composite_over_white(p[0], alpha);
        continue;
      }
      const size_t bit = x * layout.bits;
      const uint32_t shift = 8 - layout.bits - (bit % 8);  // leftmost pixel in the high bits
      const uint32_t index = (src[bit / 8] >> shift) & ((1u << layout.bits) - 1);
      if (index >= layout.palette_size) {
        dst[0] = dst[1] = dst[2] = 0;  // past a short palette: black, as Pillow pads it
        continue;
      }
      const uint8_t* entry = layout.palette + size_t{index} * layout.palette_entry;
      dst[0] = entry[2];
      dst[1] = entry[1];
      dst[2] = entry[0];
    }
  }
  return out;
}

}  // namespace qvl::decode_detail
