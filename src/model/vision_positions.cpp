#include "model/vision_positions.h"

#include <algorithm>
#include <cmath>

#include "base/thread_pool.h"

namespace qvl {
namespace {

// torch.linspace(start, end, steps) in float32: filled from both ends, as torch does.
std::vector<float> linspace(float start, float end, int64_t steps) {
  std::vector<float> v(static_cast<size_t>(steps));
  if (steps == 1) {
    v[0] = start;
    return v;
  }
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int64_t halfway = steps / 2;
  for (int64_t i = 0; i < steps; ++i) {
    v[i] = i < halfway ? start + step * static_cast<float>(i)
                       : end - step * static_cast<float>(steps - i - 1);
  }
  return v;
}

}  // namespace

void patch_coordinates(int64_t gh, int64_t gw, int64_t m, std::vector<int64_t>& rows,
                       std::vector<int64_t>& cols) {
  rows.clear();
  cols.clear();
  for (int64_t br = 0; br < gh / m; ++br)
    for (int64_t bc = 0; bc < gw / m; ++bc)
      for (int64_t ir = 0; ir < m; ++ir)
        for (int64_t ic = 0; ic < m; ++ic) {
          rows.push_back(br * m + ir);
          cols.push_back(bc * m + ic);
        }
}

void interpolate_position_embeddings(const ops::WeightRef& table, int64_t gh, int64_t gw, int64_t m,
                                     float* out) {
  const int64_t side =
      static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(table.rows))));
  const int64_t hid = table.cols;
  const std::vector<float> hy = linspace(0.0f, static_cast<float>(side - 1), gh);
  const std::vector<float> wx = linspace(0.0f, static_cast<float>(side - 1), gw);
  std::vector<int64_t> rows, cols;
  patch_coordinates(gh, gw, m, rows, cols);
  // Patches are independent: split over the pool (each range converts its own table rows).
  ThreadPool::global().parallel_for(
      rows.size(),
      [&](size_t begin, size_t end) {
        std::vector<float> corner(static_cast<size_t>(4 * hid));
        for (size_t p = begin; p < end; ++p) {
          const float y = hy[rows[p]], x = wx[cols[p]];
          const int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x);
          const int64_t y1 = std::min(y0 + 1, side - 1), x1 = std::min(x0 + 1, side - 1);
          const float dy = y - static_cast<float>(y0), dx = x - static_cast<float>(x0);
          const int64_t idx[4] = {y0 * side + x0, y0 * side + x1, y1 * side + x0, y1 * side + x1};
          const float wt[4] = {(1 - dy) * (1 - dx), (1 - dy) * dx, dy * (1 - dx), dy * dx};
          for (int k = 0; k < 4; ++k) ops::weight_row_to_f32(table, idx[k], &corner[k * hid]);
          float* o = out + p * hid;
          for (int64_t c = 0; c < hid; ++c) {
            // Same association as the reference: ((e0*w0 + e1*w1) + e2*w2) + e3*w3.
            o[c] = corner[c] * wt[0] + corner[hid + c] * wt[1] + corner[2 * hid + c] * wt[2] +
                   corner[3 * hid + c] * wt[3];
          }
        }
      },
      16);
}

void vision_rotary_angles(int64_t gh, int64_t gw, int64_t m, int64_t head_dim, float* out) {
  const int64_t dim = head_dim / 2;  // rotary dim of one axis pair
  const int64_t nfreq = dim / 2;
  std::vector<float> inv_freq(static_cast<size_t>(nfreq));
  for (int64_t i = 0; i < nfreq; ++i) {
    inv_freq[i] = 1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / static_cast<float>(dim));
  }
  std::vector<int64_t> rows, cols;
  patch_coordinates(gh, gw, m, rows, cols);
  for (size_t p = 0; p < rows.size(); ++p) {
    float* o = out + p * dim;
    for (int64_t i = 0; i < nfreq; ++i) {
      o[i] = static_cast<float>(rows[p]) * inv_freq[i];
      o[nfreq + i] = static_cast<float>(cols[p]) * inv_freq[i];
    }
  }
}

}  // namespace qvl
