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

// Runs fn(begin, end) over [0, items) on the global pool, in chunks of roughly 64K operations.
template <typename Fn>
void for_items(size_t items, size_t work_per_item, const Fn& fn) {
  const size_t grain = std::max<size_t>(1, (size_t{1} << 16) / std::max<size_t>(1, work_per_item));
  if (items <= grain) {
    fn(size_t{0}, items);
    return;
  }
  ThreadPool::global().parallel_for(items, fn, grain);
}

// The integer kernels below are compiled twice, for AVX2 (8 x int32 multiplies) and for the
// baseline, and the loader picks one; the arithmetic, hence the result, is the same.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QVL_RESIZE_KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define QVL_RESIZE_KERNEL
#endif

// The horizontal pass works on blocks of kBlockRows rows transposed to column order, so that one
// tap updates kLanes (row, channel) sums with contiguous vector loads.
constexpr int kBlockRows = 16;
constexpr int kLanes = kBlockRows * 3;

// columns: [in_width][kLanes] samples; out_columns: [out_width][kLanes].
QVL_RESIZE_KERNEL void horizontal_block(const uint8_t* columns, const int* first, const int* count,
                                        const int32_t* weights, int stride, int out_width,
                                        uint8_t* out_columns) {
  for (int x = 0; x < out_width; ++x) {
    int32_t acc[kLanes];
    for (int j = 0; j < kLanes; ++j) acc[j] = kHalf;
    const int32_t* k = weights + static_cast<size_t>(x) * stride;
    const uint8_t* p = columns + static_cast<size_t>(first[x]) * kLanes;
    for (int i = 0, n = count[x]; i < n; ++i, p += kLanes) {
      const int32_t w = k[i];
      for (int j = 0; j < kLanes; ++j) acc[j] += p[j] * w;
    }
    uint8_t* out = out_columns + static_cast<size_t>(x) * kLanes;
    for (int j = 0; j < kLanes; ++j) out[j] = clip_fixed(acc[j]);
  }
}

// One output row of the vertical pass: n source rows `stride` bytes apart, `width` samples each.
QVL_RESIZE_KERNEL void vertical_row(const uint8_t* rows, size_t stride, const int32_t* k, int n,
                                    size_t width, int32_t* acc, uint8_t* out) {
  // Column chunks keep the accumulators in L1 while all taps are applied.
  constexpr size_t kChunk = 2048;
  for (size_t j0 = 0; j0 < width; j0 += kChunk) {
    const size_t len = std::min(kChunk, width - j0);
    for (size_t j = 0; j < len; ++j) acc[j] = kHalf;
    for (int i = 0; i < n; ++i) {
      const uint8_t* in = rows + i * stride + j0;
      const int32_t w = k[i];
      for (size_t j = 0; j < len; ++j) acc[j] += in[j] * w;
    }
    for (size_t j = 0; j < len; ++j) out[j0 + j] = clip_fixed(acc[j]);
  }
}

// Resamples rows [row_begin, row_begin + out.height) of `src` horizontally into `out`.
void resample_horizontal(const RgbImage& src, int row_begin, const AxisTaps& taps, RgbImage& out) {
  const size_t src_stride = static_cast<size_t>(src.width) * 3;
  const size_t out_stride = static_cast<size_t>(out.width) * 3;
  const size_t blocks = (static_cast<size_t>(out.height) + kBlockRows - 1) / kBlockRows;
  const size_t work = static_cast<size_t>(out.width) * taps.stride * kLanes;
  for_items(blocks, work, [&](size_t begin, size_t end) {
    std::vector<uint8_t> columns(static_cast<size_t>(src.width) * kLanes);
    std::vector<uint8_t> out_columns(static_cast<size_t>(out.width) * kLanes);
    for (size_t block = begin; block < end; ++block) {
      const size_t y0 = block * kBlockRows;
      const int rows = static_cast<int>(std::min<size_t>(kBlockRows, out.height - y0));
      if (rows < kBlockRows) std::fill(columns.begin(), columns.end(), 0);
      for (int r = 0; r < rows; ++r) {
        const uint8_t* in = src.pixels.data() + (row_begin + y0 + r) * src_stride;
        uint8_t* col = columns.data() + r * 3;
        for (int x = 0; x < src.width; ++x, in += 3, col += kLanes) {
          col[0] = in[0];
          col[1] = in[1];
          col[2] = in[2];
        }
      }
      horizontal_block(columns.data(), taps.first.data(), taps.count.data(), taps.weights.data(),
                       taps.stride, out.width, out_columns.data());
      for (int r = 0; r < rows; ++r) {
        uint8_t* dst = out.pixels.data() + (y0 + r) * out_stride;
        const uint8_t* col = out_columns.data() + r * 3;
        for (int x = 0; x < out.width; ++x, dst += 3, col += kLanes) {
          dst[0] = col[0];
          dst[1] = col[1];
          dst[2] = col[2];
        }
      }
    }
  });
}

// Resamples `src` vertically into `out`; tap indices are relative to `src`'s first row.
void resample_vertical(const RgbImage& src, int row_offset, const AxisTaps& taps, RgbImage& out) {
  const size_t stride = static_cast<size_t>(src.width) * 3;
  for_items(out.height, stride * taps.stride, [&](size_t begin, size_t end) {
    std::vector<int32_t> acc(std::min<size_t>(stride, 2048));
    for (size_t y = begin; y < end; ++y) {
      vertical_row(src.pixels.data() + (taps.first[y] - row_offset) * stride, stride,
                   &taps.weights[y * taps.stride], taps.count[y], stride, acc.data(),
                   out.pixels.data() + y * stride);
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
  if (src.width <= 0 || src.height <= 0 || src.width > kMaxResizeSide ||
      src.height > kMaxResizeSide ||
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
