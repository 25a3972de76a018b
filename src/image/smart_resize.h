// Qwen2-VL / Qwen3-VL "smart resize": the target size of an image before patchifying, exactly as
// transformers' smart_resize computes it (Python float semantics, banker's rounding).
#pragma once

#include <cstdint>

namespace qvl {

struct ImageSize {
  int height = 0;
  int width = 0;
};

// Both sides become multiples of `factor` (patch_size * merge_size) with the aspect ratio kept as
// closely as possible and height * width inside [min_pixels, max_pixels]:
//   h = round_half_even(H / factor) * factor (same for w); if h * w > max_pixels, both sides
//   are scaled down by beta = sqrt(H * W / max_pixels) and floored (at least `factor`); if
//   h * w < min_pixels, scaled up by beta = sqrt(min_pixels / (H * W)) and ceiled.
// Throws qvl::Error(kInvalidArgument) for non-positive sizes or parameters, an aspect ratio
// above 200 (the reference refuses those too), or a result with a zero side (only possible when
// min_pixels is 0 and a side is below factor / 2). Like the reference, the upscaling branch may
// end slightly above max_pixels for extreme aspect ratios.
ImageSize smart_resize(int64_t height, int64_t width, int factor, int64_t min_pixels,
                       int64_t max_pixels);

}  // namespace qvl
