#include "ops/matmul.h"

#include <vector>

#include "base/stage_profile.h"
#include "base/thread_pool.h"

namespace qvl::ops {

float dot_f32(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float tail = 0;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

void matmul(const float* x, int64_t m, const WeightRef& w, const float* bias, float* y) {
  const profile::StageScope stage(profile::Work::kMatmul);
  const int64_t n = w.rows, k = w.cols;
  // Each task converts a block of weight rows once and reuses them for every row of x.
  constexpr int64_t kRowBlock = 16;
  const int64_t blocks = (n + kRowBlock - 1) / kRowBlock;
  ThreadPool::global().parallel_for(static_cast<size_t>(blocks), [&](size_t b0, size_t b1) {
    std::vector<float> wrows(static_cast<size_t>(kRowBlock * k));
    for (int64_t b = static_cast<int64_t>(b0); b < static_cast<int64_t>(b1); ++b) {
      const int64_t r0 = b * kRowBlock;
      const int64_t r1 = std::min(n, r0 + kRowBlock);
      for (int64_t r = r0; r < r1; ++r) weight_row_to_f32(w, r, &wrows[(r - r0) * k]);
      for (int64_t i = 0; i < m; ++i) {
        const float* xi = x + i * k;
        float* yi = y + i * n;
        for (int64_t r = r0; r < r1; ++r) {
          const float v = dot_f32(xi, &wrows[(r - r0) * k], k);
          yi[r] = bias ? v + bias[r] : v;
        }
      }
    }
  });
}

}  // namespace qvl::ops
