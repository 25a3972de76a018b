#include "image/exif_orientation.h"

#include <cstddef>

namespace qvl {

RgbImage apply_exif_orientation(const RgbImage& image, int orientation) {
  if (orientation < 2 || orientation > 8) return image;
  const size_t w = image.width, h = image.height;
  const bool swaps = orientation >= 5;
  RgbImage out;
  out.width = swaps ? image.height : image.width;
  out.height = swaps ? image.width : image.height;
  out.pixels.resize(image.pixels.size());
  const size_t out_w = out.width, out_h = out.height;
  for (size_t y = 0; y < out_h; ++y) {
    for (size_t x = 0; x < out_w; ++x) {
      // (sx, sy): the stored pixel that lands at (x, y) of the upright picture.
      size_t sx = x, sy = y;
      switch (orientation) {
        case 2:
          sx = w - 1 - x;
          break;
        case 3:
          sx = w - 1 - x;
          sy = h - 1 - y;
          break;
        case 4:
          sy = h - 1 - y;
          break;
        case 5:
          sx = y;
          sy = x;
          break;
        case 6:
          sx = y;
          sy = h - 1 - x;
          break;
        case 7:
          sx = w - 1 - y;
          sy = h - 1 - x;
          break;
        case 8:
          sx = w - 1 - y;
          sy = x;
          break;
      }
      const uint8_t* src = &image.pixels[(sy * w + sx) * 3];
      uint8_t* dst = &out.pixels[(y * out_w + x) * 3];
      dst[0] = src[0];
      dst[1] = src[1];
      dst[2] = src[2];
    }
  }
  return out;
}

}  // namespace qvl
