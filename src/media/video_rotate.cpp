// Turning decoded frames upright: phones store portrait video as landscape frames plus a display
// matrix that says how to turn them, and the model must see what the player shows.
#include <cstring>
#include <utility>

#include "base/error.h"
#include "media/video_decoder.h"

namespace qvl::media {

RgbImage rotate_clockwise(RgbImage image, int degrees) {
  if (degrees == 0) return image;
  QVL_CHECK(degrees == 90 || degrees == 180 || degrees == 270);
  const int w = image.width, h = image.height;
  RgbImage out;
  out.width = degrees == 180 ? w : h;
  out.height = degrees == 180 ? h : w;
  out.pixels.resize(image.pixels.size());
  const uint8_t* src = image.pixels.data();
  uint8_t* dst = out.pixels.data();
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      // Where source pixel (x, y) lands in the turned picture.
      int ox, oy;
      if (degrees == 90) {
        ox = h - 1 - y;
        oy = x;
      } else if (degrees == 180) {
        ox = w - 1 - x;
        oy = h - 1 - y;
      } else {
        ox = y;
        oy = w - 1 - x;
      }
      std::memcpy(dst + (size_t(oy) * out.width + ox) * 3, src + (size_t(y) * w + x) * 3, 3);
    }
  }
  return out;
}

}  // namespace qvl::media
