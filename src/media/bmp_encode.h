// Rendered pages reach the engine as encoded image bytes (qvl::ImageInput): an uncompressed
// 24-bit BMP costs no compression time, is lossless, and the image decoder reads it back exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "image/rgb_image.h"

namespace qvl::media {

std::vector<uint8_t> encode_bmp(const RgbImage& image);

}  // namespace qvl::media
