// Normalise + patchify: turns a resized 8-bit RGB image into the vision tower's pixel_values
// rows, bit-exact with transformers' Qwen2VLImageProcessor (the slow numpy path).
#pragma once

#include <array>
#include <cstddef>

#include "image/rgb_image.h"

namespace qvl {

struct PatchLayout {
  int patch_size = 16;          // pixels per patch side
  int temporal_patch_size = 2;  // a still image is repeated this many times
  int merge_size = 2;           // patches per side of one merge window
  int channels() const { return 3; }
  size_t patch_dim() const {
    return static_cast<size_t>(channels()) * temporal_patch_size * patch_size * patch_size;
  }
};

// x = float32(float64(u8) * rescale_factor); x = (x - mean[c]) / std[c] in float32, as numpy.
struct Normalization {
  double rescale_factor = 1.0 / 255.0;
  std::array<float, 3> mean = {0.5f, 0.5f, 0.5f};
  std::array<float, 3> std = {0.5f, 0.5f, 0.5f};
};

// Throws qvl::Error(kInvalidArgument) unless every size is positive (and not absurdly large).
void validate_patch_layout(const PatchLayout& layout);

// Writes (height / P) * (width / P) rows of layout.patch_dim() floats to `out`.
// Rows are in merge-window order: (block_row, block_col, row_in_window, col_in_window), i.e.
// every merge_size x merge_size window of patches is contiguous, windows in raster order.
// Each row is ordered (channel, frame, y, x); all frames are the same still image.
// The image sides must be multiples of patch_size * merge_size (throws otherwise).
void normalize_and_patchify(const RgbImage& image, const PatchLayout& layout,
                            const Normalization& norm, float* out);

}  // namespace qvl
