// A decoded picture: 8-bit RGB, row-major, no padding (pixels.size() == width * height * 3).
#pragma once

#include <cstdint>
#include <vector>

namespace qvl {

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // HWC, R G B
};

}  // namespace qvl
