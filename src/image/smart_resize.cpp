#include "image/smart_resize.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"

namespace qvl {
namespace {

// Sides up to 2^24 keep every product below 2^53, so double arithmetic equals Python's exact
// int / int true division and int -> float conversions.
constexpr int64_t kMaxSide = int64_t{1} << 24;
// Keeps every intermediate far from int64 overflow (2^40 pixels is ~1e12).
constexpr int64_t kMaxPixelBound = int64_t{1} << 40;

// Python's round() on a float: ties go to the even neighbour.
int64_t round_half_even(double x) {
  const double floor_x = std::floor(x);
  const double diff = x - floor_x;
  double r = floor_x;
  if (diff > 0.5 || (diff == 0.5 && std::fmod(floor_x, 2.0) != 0.0)) r = floor_x + 1.0;
  return static_cast<int64_t>(r);
}

std::string size_text(int64_t height, int64_t width) {
  return std::to_string(width) + "x" + std::to_string(height);
}

}  // namespace

ImageSize smart_resize(int64_t height, int64_t width, int factor, int64_t min_pixels,
                       int64_t max_pixels) {
  if (height <= 0 || width <= 0 || height > kMaxSide || width > kMaxSide) {
    fail(ErrorCode::kInvalidArgument, "image size " + size_text(height, width) +
                                          " is out of range (each side 1.." +
                                          std::to_string(kMaxSide) + " pixels)");
  }
  if (factor <= 0 || min_pixels < 0 || max_pixels <= 0 || min_pixels > max_pixels ||
      max_pixels > kMaxPixelBound) {
    fail(ErrorCode::kInvalidArgument,
         "invalid resize parameters: factor " + std::to_string(factor) + ", min_pixels " +
             std::to_string(min_pixels) + ", max_pixels " + std::to_string(max_pixels));
  }
  const double long_side = static_cast<double>(std::max(height, width));
  const double short_side = static_cast<double>(std::min(height, width));
  if (long_side / short_side > 200.0) {
    fail(ErrorCode::kInvalidArgument, "image " + size_text(height, width) +
                                          " has an aspect ratio above 200, which Qwen-VL refuses");
  }
  const double h = static_cast<double>(height);
  const double w = static_cast<double>(width);
  const double f = static_cast<double>(factor);
  const double area = static_cast<double>(height * width);
  int64_t h_bar = round_half_even(h / f) * factor;
  int64_t w_bar = round_half_even(w / f) * factor;
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(area / static_cast<double>(max_pixels));
    h_bar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / area);
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  if (h_bar <= 0 || w_bar <= 0 || h_bar > kMaxSide || w_bar > kMaxSide) {
    fail(ErrorCode::kInvalidArgument, "image " + size_text(height, width) +
                                          " cannot be resized to a valid size (got " +
                                          size_text(h_bar, w_bar) + "); raise min_pixels");
  }
  return ImageSize{static_cast<int>(h_bar), static_cast<int>(w_bar)};
}

}  // namespace qvl
