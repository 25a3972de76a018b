// Heads whose width is not a whole number of 16-float vectors (Qwen3-VL-8B/32B's vision tower:
// 1152 / 16 heads = 72) run on the flash kernels with their rows zero-padded to the next
// multiple of 16: a zero column adds exactly nothing to q.k, and the padded output columns are
// dropped. 72 -> 80 costs 11% more arithmetic; the scalar reference, the alternative, is ~20x
// slower.
#include <algorithm>
#include <vector>

#include "ops/attention.h"
#include "ops/attention_kernels.h"

namespace qvl::ops::attention_kernels {
namespace {

// rows [n, heads, from] -> [n, heads, to], the extra columns zero.
void pad_rows(const float* src, int64_t rows, int64_t from, int64_t to, std::vector<float>& dst) {
  dst.assign(static_cast<size_t>(rows * to), 0.0f);
  for (int64_t r = 0; r < rows; ++r) std::copy_n(src + r * from, from, dst.data() + r * to);
}

}  // namespace

int64_t padded_head_dim(int64_t head_dim) {
  return (head_dim + kKeyTile - 1) / kKeyTile * kKeyTile;
}

void attention_padded_heads(const float* q, int64_t nq, const float* k, const float* v, int64_t nk,
                            const AttentionShape& s, int64_t causal_offset, float* out) {
  const int64_t d = s.head_dim, padded = padded_head_dim(d);
  thread_local std::vector<float> qp, kp, vp, op;
  pad_rows(q, nq * s.n_heads, d, padded, qp);
  pad_rows(k, nk * s.n_kv_heads, d, padded, kp);
  pad_rows(v, nk * s.n_kv_heads, d, padded, vp);
  op.resize(static_cast<size_t>(nq * s.n_heads * padded));
  AttentionShape wide = s;  // the scale stays 1/sqrt of the real width
  wide.head_dim = padded;
  attention(qp.data(), nq, kp.data(), vp.data(), nk, wide, causal_offset, op.data());
  for (int64_t r = 0; r < nq * s.n_heads; ++r) {
    std::copy_n(op.data() + r * padded, d, out + r * d);
  }
}

}  // namespace qvl::ops::attention_kernels
