// Pillow-compatible image resampling (Image.resize with BICUBIC), bit-exact with Pillow's 8-bit
// path so that preprocessing matches the transformers reference pixel for pixel.
#pragma once

#include "image/rgb_image.h"

namespace qvl {

// Largest side (input or output) accepted by resize_bicubic, and largest output pixel count.
inline constexpr int kMaxResizeSide = 1 << 20;
inline constexpr long long kMaxResizePixels = 1LL << 28;

// Resizes with Pillow's BICUBIC (Keys cubic, a = -0.5). Like Pillow, the filter support grows
// with the reduction factor when shrinking (antialiasing), each axis is resampled separately
// (horizontal pass first, then vertical, with an 8-bit intermediate image), weights are 22-bit
// fixed point, and an axis whose size does not change is not resampled at all.
// Throws qvl::Error(kInvalidArgument) for an empty/inconsistent/oversized source or an output
// size that is non-positive or above the limits above. Uses ThreadPool::global() for large images.
RgbImage resize_bicubic(const RgbImage& src, int out_width, int out_height);

}  // namespace qvl
