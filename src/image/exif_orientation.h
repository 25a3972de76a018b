// Applying an EXIF orientation so the picture is upright (what PIL.ImageOps.exif_transpose does).
#pragma once

#include "image/rgb_image.h"

namespace qvl {

// orientation: 1 identity, 2 mirror left-right, 3 rotate 180, 4 mirror top-bottom, 5 transpose,
// 6 rotate 90 clockwise, 7 transverse, 8 rotate 90 counter-clockwise. 5..8 swap width and height.
// Values outside 1..8 are treated as 1.
RgbImage apply_exif_orientation(const RgbImage& image, int orientation);

}  // namespace qvl
