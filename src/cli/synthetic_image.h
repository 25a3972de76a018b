// Pictures drawn in code, for commands that need realistic-looking images but no files: a
// colour gradient with a few filled shapes, encoded as a 24-bit BMP so that it takes the same
// decode -> resize -> vision path as a user's image.
#pragma once

#include <cstdint>
#include <vector>

#include "image/rgb_image.h"

namespace qvl::cli {

// variant picks the colours and the layout; the same arguments always give the same picture.
RgbImage synthetic_scene(int width, int height, int variant);

// Uncompressed bottom-up 24-bit BMP (BITMAPINFOHEADER).
std::vector<uint8_t> encode_bmp(const RgbImage& image);

}  // namespace qvl::cli
