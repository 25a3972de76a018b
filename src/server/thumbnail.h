// Small previews of frames and pages for the web page: a JPEG data URI (libjpeg, already linked
// by the image decoder) of the picture shrunk to fit a square, never enlarged.
#pragma once

#include <string>

#include "image/rgb_image.h"

namespace qvl::server {

// Longest side of a preview thumbnail, in pixels: a filmstrip frame or a page tile on the page.
inline constexpr int kThumbnailSide = 192;

// "data:image/jpeg;base64,..." of `image` resized (Pillow bicubic) so its longest side is at most
// `max_side`. Throws qvl::Error for an empty image.
std::string jpeg_thumbnail_data_uri(const RgbImage& image, int max_side = kThumbnailSide);

}  // namespace qvl::server
