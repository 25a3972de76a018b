#include "image/patchify.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "base/error.h"
#include "base/thread_pool.h"

namespace qvl {

void validate_patch_layout(const PatchLayout& layout) {
  auto check = [](int value, int limit, const char* name) {
    if (value <= 0 || value > limit) {
      fail(ErrorCode::kInvalidArgument, std::string(name) + " must be in 1.." +
                                            std::to_string(limit) + ", got " +
                                            std::to_string(value));
    }
  };
  check(layout.patch_size, 1024, "patch_size");
  check(layout.temporal_patch_size, 64, "temporal_patch_size");
  check(layout.merge_size, 64, "merge_size");
}

void normalize_and_patchify(const RgbImage& image, const PatchLayout& layout,
                            const Normalization& norm, float* out) {
  validate_patch_layout(layout);
  const int p = layout.patch_size;
  const int m = layout.merge_size;
  const int window = p * m;
  if (image.width <= 0 || image.height <= 0 || image.width % window != 0 ||
      image.height % window != 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3) {
    fail(ErrorCode::kInvalidArgument,
         "patchify: image " + std::to_string(image.width) + "x" + std::to_string(image.height) +
             " is not a non-empty multiple of " + std::to_string(window) + " pixels per side");
  }
  // Only 256 inputs per channel exist, so a table reproduces numpy's arithmetic exactly.
  float table[3][256];
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      const float scaled = static_cast<float>(static_cast<double>(v) * norm.rescale_factor);
      table[c][v] = (scaled - norm.mean[c]) / norm.std[c];
    }
  }
  const int grid_w = image.width / p;
  const int blocks_w = grid_w / m;
  const int blocks_h = image.height / window;
  const int frames = layout.temporal_patch_size;
  const size_t plane = static_cast<size_t>(p) * p;  // one (channel, frame) slice of a row
  const size_t row_dim = layout.patch_dim();
  const size_t patches_per_window = static_cast<size_t>(m) * m;
  const size_t src_stride = static_cast<size_t>(image.width) * 3;

  auto fill_block_rows = [&](size_t begin, size_t end) {
    for (size_t block_row = begin; block_row < end; ++block_row) {
      for (int block_col = 0; block_col < blocks_w; ++block_col) {
        const size_t window_index = block_row * blocks_w + block_col;
        for (int wy = 0; wy < m; ++wy) {
          for (int wx = 0; wx < m; ++wx) {
            const size_t row = window_index * patches_per_window + wy * m + wx;
            float* dst = out + row * row_dim;
            const size_t y0 = (block_row * m + wy) * static_cast<size_t>(p);
            const size_t x0 = (static_cast<size_t>(block_col) * m + wx) * p;
            for (int c = 0; c < 3; ++c) {
              float* first_frame = dst + static_cast<size_t>(c) * frames * plane;
              for (int py = 0; py < p; ++py) {
                const uint8_t* src = image.pixels.data() + (y0 + py) * src_stride + x0 * 3 + c;
                float* line = first_frame + static_cast<size_t>(py) * p;
                for (int px = 0; px < p; ++px) line[px] = table[c][src[px * 3]];
              }
              for (int t = 1; t < frames; ++t) {
                std::memcpy(first_frame + t * plane, first_frame, plane * sizeof(float));
              }
            }
          }
        }
      }
    }
  };
  const size_t floats_per_block_row = static_cast<size_t>(blocks_w) * patches_per_window * row_dim;
  const size_t grain = std::max<size_t>(1, (size_t{1} << 18) / floats_per_block_row);
  if (static_cast<size_t>(blocks_h) <= grain) {
    fill_block_rows(0, blocks_h);
  } else {
    ThreadPool::global().parallel_for(blocks_h, fill_block_rows, grain);
  }
}

}  // namespace qvl
