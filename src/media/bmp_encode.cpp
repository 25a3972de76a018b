#include "media/bmp_encode.h"

#include "base/error.h"

namespace qvl::media {
namespace {

void put16(std::vector<uint8_t>& out, uint32_t value) {
  out.push_back(static_cast<uint8_t>(value));
  out.push_back(static_cast<uint8_t>(value >> 8));
}

void put32(std::vector<uint8_t>& out, uint32_t value) {
  put16(out, value & 0xFFFF);
  put16(out, value >> 16);
}

}  // namespace

std::vector<uint8_t> encode_bmp(const RgbImage& image) {
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3) {
    fail(ErrorCode::kInvalidArgument, "encode_bmp: an empty or inconsistent image");
  }
  const size_t row = (static_cast<size_t>(image.width) * 3 + 3) & ~size_t{3};
  const size_t data = row * image.height;
  if (data + 54 > UINT32_MAX) fail(ErrorCode::kInvalidArgument, "encode_bmp: image above 4 GiB");
  std::vector<uint8_t> out;
  out.reserve(54 + data);
  out.push_back('B');
  out.push_back('M');
  put32(out, static_cast<uint32_t>(54 + data));
  put32(out, 0);
  put32(out, 54);  // pixel data offset
  put32(out, 40);  // BITMAPINFOHEADER
  put32(out, static_cast<uint32_t>(image.width));
  put32(out, static_cast<uint32_t>(-image.height));  // negative: rows top-down
  put16(out, 1);
  put16(out, 24);
  put32(out, 0);  // BI_RGB
  put32(out, static_cast<uint32_t>(data));
  put32(out, 2835);  // 72 dpi
  put32(out, 2835);
  put32(out, 0);
  put32(out, 0);
  for (int y = 0; y < image.height; ++y) {
    const uint8_t* src = image.pixels.data() + static_cast<size_t>(y) * image.width * 3;
    for (int x = 0; x < image.width; ++x) {
      out.push_back(src[3 * x + 2]);  // B G R
      out.push_back(src[3 * x + 1]);
      out.push_back(src[3 * x]);
    }
    for (size_t pad = static_cast<size_t>(image.width) * 3; pad < row; ++pad) out.push_back(0);
  }
  return out;
}

}  // namespace qvl::media
