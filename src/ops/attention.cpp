#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/thread_pool.h"
#include "ops/matmul.h"

namespace qvl::ops {

void attention(const float* q, int64_t nq, const float* k, const float* v, int64_t nk,
               const AttentionShape& s, int64_t causal_offset, float* out) {
  const int64_t group = s.n_heads / s.n_kv_heads;
  const int64_t d = s.head_dim;
  ThreadPool::global().parallel_for(static_cast<size_t>(nq * s.n_heads), [&](size_t t0, size_t t1) {
    std::vector<float> scores(static_cast<size_t>(nk));
    for (size_t t = t0; t < t1; ++t) {
      const int64_t i = static_cast<int64_t>(t) / s.n_heads;
      const int64_t h = static_cast<int64_t>(t) % s.n_heads;
      const int64_t kvh = h / group;
      const int64_t visible = causal_offset < 0 ? nk : std::min(nk, causal_offset + i + 1);
      const float* qi = q + (i * s.n_heads + h) * d;
      float max_score = -INFINITY;
      for (int64_t j = 0; j < visible; ++j) {
        scores[j] = dot_f32(qi, k + (j * s.n_kv_heads + kvh) * d, d) * s.scale;
        max_score = std::max(max_score, scores[j]);
      }
      float sum = 0;
      for (int64_t j = 0; j < visible; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
      }
      const float inv = 1.0f / sum;
      float* o = out + (i * s.n_heads + h) * d;
      std::fill(o, o + d, 0.0f);
      for (int64_t j = 0; j < visible; ++j) {
        const float p = scores[j] * inv;
        const float* vj = v + (j * s.n_kv_heads + kvh) * d;
        for (int64_t c = 0; c < d; ++c) o[c] += p * vj[c];
      }
    }
  });
}

}  // namespace qvl::ops
