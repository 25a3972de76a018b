// The decode attention driver (see attention_decode.h): tasks over spans x head runs, then the
// merge of the spans' partial softmax states.
#include "ops/attention_decode.h"

#include <algorithm>
#include <cmath>

#include "base/aligned_buffer.h"
#include "base/error.h"
#include "base/thread_pool.h"

namespace qvl::ops::attention_kernels {
namespace {

// out row = sum_s w_s o_s / sum_s w_s l_s with w_s = exp(m_s - max m), spans in order; spans the
// row sees nothing of (m = -inf) are skipped, so they change no bit.
void merge_row(const float* states, int64_t spans, int64_t span_floats, int64_t d, float* out) {
  float m = -INFINITY;
  for (int64_t x = 0; x < spans; ++x) m = std::max(m, states[x * span_floats + d]);
  float l = 0;
  std::fill(out, out + d, 0.0f);
  for (int64_t x = 0; x < spans; ++x) {
    const float* st = states + x * span_floats;
    if (st[d] == -INFINITY) continue;
    const float w = std::exp(st[d] - m);
    l += w * st[d + 1];
    for (int64_t c = 0; c < d; ++c) out[c] += w * st[c];
  }
  const float inv = 1.0f / l;
  for (int64_t c = 0; c < d; ++c) out[c] *= inv;
}

}  // namespace

void decode_attention(DecodeSpanKernel kernel, const Problem& p) {
  const AttentionShape& s = p.shape;
  const int64_t group = s.n_heads / s.n_kv_heads, rows = p.nq * group, d = s.head_dim;
  QVL_CHECK(rows <= kDecodeMaxRows);
  // The last query sees the most keys; causal rows always see at least their own position.
  const int64_t keys = p.causal_offset >= 0 ? std::min(p.nk, p.causal_offset + p.nq) : p.nk;
  const int64_t spans = (keys + kDecodeSpan - 1) / kDecodeSpan;
  // Whole positions (every kv head) stream best, so most tasks are a whole span. Spans that would
  // leave the threads uneven (the last spans % threads of them: an odd count over two threads, or
  // a context just past a multiple of the span) are cut into one run of kv heads per thread
  // instead, handed out last to even out the finish. The split changes no result bit.
  const int64_t threads = ThreadPool::global().size();
  const int64_t whole = spans >= threads ? spans - spans % threads : 0;
  const int64_t heads_per_run = (s.n_kv_heads + threads - 1) / threads;
  const int64_t runs = (s.n_kv_heads + heads_per_run - 1) / heads_per_run;
  const int64_t tasks = whole + (spans - whole) * runs;

  const int64_t stride = d + 2;
  const int64_t span_floats = s.n_kv_heads * rows * stride;
  AlignedBuffer<float> states(static_cast<size_t>(spans * span_floats));
  ThreadPool::global().parallel_for(static_cast<size_t>(tasks), [&](size_t b, size_t e) {
    AlignedBuffer<float> scratch(static_cast<size_t>(s.n_kv_heads * rows * kDecodeScoreStride));
    for (size_t index = b; index < e; ++index) {
      const auto t = static_cast<int64_t>(index);
      const int64_t span = t < whole ? t : whole + (t - whole) / runs;
      DecodeTask task;
      task.kvh_begin = t < whole ? 0 : (t - whole) % runs * heads_per_run;
      task.kvh_end =
          t < whole ? s.n_kv_heads : std::min(s.n_kv_heads, task.kvh_begin + heads_per_run);
      task.j0 = span * kDecodeSpan;
      task.j1 = std::min(keys, task.j0 + kDecodeSpan);
      task.state = states.data() + span * span_floats;
      task.state_stride = stride;
      task.scratch = scratch.data();
      kernel(p, task);
    }
  });
  // States of one (kv head, row) are span_floats apart, one per span.
  for (int64_t h = 0; h < s.n_kv_heads; ++h) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = r / group;
      merge_row(states.data() + (h * rows + r) * stride, spans, span_floats, d,
                p.out + (i * s.n_heads + h * group + r % group) * d);
    }
  }
}

}  // namespace qvl::ops::attention_kernels
