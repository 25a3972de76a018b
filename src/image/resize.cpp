#include "image/resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"

namespace qvl {
namespace {

// Pillow keeps 8 bits of headroom for the pixel value and 2 for overshoot of the cubic lobes.
constexpr int kPrecisionBits = 32 - 8 - 2;
constexpr int32_t kHalf = int32_t{1} << (kPrecisionBits - 1);
constexpr double kBicubicSupport = 2.0;

double bicubic_weight(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

// For each output index along one axis: the first input index, how many inputs contribute, and
// their fixed-point weights (row `o` of `weights`, `stride` entries per row).
struct AxisTaps {
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int32_t> weights;
  int stride = 0;
};

AxisTaps compute_taps(int in_size, int out_size) {
  // Same double arithmetic and evaluation order as Pillow's precompute_coeffs with the default
  // box (0, 0, in_size): any deviation here shows up as +-1 differences in the output.
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = kBicubicSupport * filter_scale;
  const double inv_filter_scale = 1.0 / filter_scale;
  AxisTaps taps;
  taps.stride = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.first.resize(out_size);
  taps.count.resize(out_size);
  taps.weights.assign(static_cast<size_t>(out_size) * taps.stride, 0);
  std::vector<double> w(taps.stride);
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(0, static_cast<int>(center - support + 0.5));
    const int hi = std::min(in_size, static_cast<int>(center + support + 0.5));
    const int n = hi - lo;
    double total = 0.0;
    for (int i = 0; i < n; ++i) {
      w[i] = bicubic_weight((i + lo - center + 0.5) * inv_filter_scale);
      total += w[i];
    }
    int32_t* fixed = &taps.weights[static_cast<size_t>(o) * taps.stride];
    for (int i = 0; i < n; ++i) {
      const double normalized = total != 0.0 ? w[i] / total : w[i];
      const double scaled = normalized * (1 << kPrecisionBits);
      fixed[i] = static_cast<int32_t>(normalized < 0 ? scaled - 0.5 : scaled + 0.5);
    }
    taps.first[o] = lo;
    taps.count[o] = n;
  }
  return taps;
}

inline uint8_t clip_fixed(int32_t acc) {
  // Arithmetic shift = floor division, as Pillow's lookup-table clip does.
  return static_cast<uint8_t>(std::clamp(acc >> kPrecisionBits, 0, 255));
}

// Runs fn(begin, end) over [0, rows) on the global pool, in chunks of roughly 64K samples.
template <typename Fn>
void for_rows(int rows, int samples_per_row, const Fn& fn) {
  const size_t grain = std::max<size_t>(1, (size_t{1} << 16) / std::max(1, samples_per_row));
  if (static_cast<size_t>(rows) <= grain) {
    fn(size_t{0}, static_cast<size_t>(rows));
    return;
  }
  ThreadPool::global().parallel_for(static_cast<size_t>(rows), fn, grain);
}

// Resamples rows [row_begin, row_begin + out.height) of `src` horizontally into `out`.
void resample_horizontal(const RgbImage& src, int row_begin, const AxisTaps& taps, RgbImage& out) {
  const size_t src_stride = static_cast<size_t>(src.width) * 3;
  const size_t out_stride = static_cast<size_t>(out.width) * 3;
  for_rows(out.height, out.width * taps.stride, [&](size_t begin, size_t end) {
    for (size_t y = begin; y < end; ++y) {
      const uint8_t* in_row = src.pixels.data() + (row_begin + y) * src_stride;
      uint8_t* out_row = out.pixels.data() + y * out_stride;
      for (int x = 0; x < out.width; ++x) {
        const int32_t* k = &taps.weights[static_cast<size_t>(x) * taps.stride];
        const uint8_t* p = in_row + static_cast<size_t>(taps.first[x]) * 3;
        int32_t r = kHalf, g = kHalf, b = kHalf;
        for (int i = 0, n = taps.count[x]; i < n; ++i, p += 3) {
          r += p[0] * k[i];
          g += p[1] * k[i];
          b += p[2] * k[i];
        }
        out_row[x * 3 + 0] = clip_fixed(r);
        out_row[x * 3 + 1] = clip_fixed(g);
        out_row[x * 3 + 2] = clip_fixed(b);
      }
    }
  });
}

// Resamples `src` vertically into `out`; tap indices are relative to `src`'s first row.
void resample_vertical(const RgbImage& src, int row_offset, const AxisTaps& taps, RgbImage& out) {
  const size_t stride = static_cast<size_t>(src.width) * 3;
  for_rows(out.height, out.width * 3 * taps.stride, [&](size_t begin, size_t end) {
    std::vector<int32_t> acc(stride);
    for (size_t y = begin; y < end; ++y) {
      std::fill(acc.begin(), acc.end(), kHalf);
      const int32_t* k = &taps.weights[y * taps.stride];
      const uint8_t* rows = src.pixels.data() + (taps.first[y] - row_offset) * stride;
      for (int i = 0, n = taps.count[y]; i < n; ++i) {
        const uint8_t* in_row = rows + i * stride;
        const int32_t weight = k[i];
        // Tap-outer, column-inner so that this loop vectorises.
        for (size_t j = 0; j < stride; ++j) acc[j] += in_row[j] * weight;
      }
      uint8_t* out_row = out.pixels.data() + y * stride;
      for (size_t j = 0; j < stride; ++j) out_row[j] = clip_fixed(acc[j]);
    }
  });
}

RgbImage blank(int width, int height) {
  RgbImage image;
  image.width = width;
  image.height = height;
  image.pixels.resize(static_cast<size_t>(width) * height * 3);
  return image;
}

}  // namespace

RgbImage resize_bicubic(const RgbImage& src, int out_width, int out_height) {
  if (src.width <= 0 || src.height <= 0 ||
      src.pixels.size() != static_cast<size_t>(src.width) * src.height * 3) {
    fail(ErrorCode::kInvalidArgument, "resize: source image " + std::to_string(src.width) + "x" +
                                          std::to_string(src.height) +
                                          " is empty or its pixel buffer has the wrong size");
  }
  if (out_width <= 0 || out_height <= 0 || out_width > kMaxResizeSide ||
      out_height > kMaxResizeSide ||
      static_cast<long long>(out_width) * out_height > kMaxResizePixels) {
    fail(ErrorCode::kInvalidArgument, "resize: output size " + std::to_string(out_width) + "x" +
                                          std::to_string(out_height) + " is out of range");
  }
  const bool need_horizontal = out_width != src.width;
  const bool need_vertical = out_height != src.height;
  if (!need_horizontal && !need_vertical) return src;

  const AxisTaps vertical = compute_taps(src.height, out_height);
  if (!need_horizontal) {
    RgbImage out = blank(out_width, out_height);
    resample_vertical(src, 0, vertical, out);
    return out;
  }
  // Only the source rows the vertical pass reads are resampled horizontally (as Pillow does).
  const int first_row = vertical.first.front();
  const int end_row = vertical.first.back() + vertical.count.back();
  const AxisTaps horizontal = compute_taps(src.width, out_width);
  RgbImage temp = blank(out_width, end_row - first_row);
  resample_horizontal(src, first_row, horizontal, temp);
  if (!need_vertical) return temp;
  RgbImage out = blank(out_width, out_height);
  resample_vertical(temp, first_row, vertical, out);
  return out;
}

}  // namespace qvl
