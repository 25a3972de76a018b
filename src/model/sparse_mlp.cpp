#include "model/sparse_mlp.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "base/error.h"
#include "ops/activation.h"

namespace qvl {

void route_token(const float* logits, int64_t num_experts, int64_t top_k, ExpertChoice& out) {
  QVL_CHECK(0 < top_k && top_k <= num_experts);
  // softmax in fp32 as transformers computes it (max subtracted, then scaled by 1 / sum).
  float max = logits[0];
  for (int64_t e = 1; e < num_experts; ++e) max = std::max(max, logits[e]);
  thread_local std::vector<float> p;
  p.resize(static_cast<size_t>(num_experts));
  float sum = 0;
  for (int64_t e = 0; e < num_experts; ++e) {
    p[e] = std::exp(logits[e] - max);
    sum += p[e];
  }
  const float inv = 1.0f / sum;
  for (float& v : p) v *= inv;
  // The top_k probabilities, best first; equal ones in index order (a stable selection).
  out.experts.resize(static_cast<size_t>(num_experts));
  std::iota(out.experts.begin(), out.experts.end(), 0);
  std::partial_sort(out.experts.begin(), out.experts.begin() + top_k, out.experts.end(),
                    [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  out.experts.resize(static_cast<size_t>(top_k));
  out.weights.resize(static_cast<size_t>(top_k));
  float chosen = 0;
  for (int64_t j = 0; j < top_k; ++j) chosen += p[out.experts[j]];
  for (int64_t j = 0; j < top_k; ++j) out.weights[j] = p[out.experts[j]] / chosen;
}

void SparseMlp::forward(const SparseMlpWeights& w, int64_t top_k, const float* x, int64_t n,
                        float* y) {
  const auto num_experts = static_cast<int64_t>(w.experts.size());
  const int64_t hidden = w.router.cols(), ff = w.experts.at(0).gate_proj.rows();
  const auto rows = static_cast<size_t>(n), slots = static_cast<size_t>(n * top_k);
  logits_.resize(rows * num_experts);
  ops::matmul(x, n, w.router, nullptr, logits_.data());
  chosen_.resize(slots);
  chosen_weights_.resize(slots);
  for (int64_t i = 0; i < n; ++i) {
    route_token(logits_.data() + i * num_experts, num_experts, top_k, choice_);
    std::copy(choice_.experts.begin(), choice_.experts.end(), chosen_.begin() + i * top_k);
    std::copy(choice_.weights.begin(), choice_.weights.end(), chosen_weights_.begin() + i * top_k);
  }

  // Slots sorted by (expert, row): expert e's rows are slots [expert_begin_[e], [e + 1]).
  expert_begin_.assign(static_cast<size_t>(num_experts + 1), 0);
  for (int32_t e : chosen_) ++expert_begin_[e + 1];
  for (int64_t e = 0; e < num_experts; ++e) expert_begin_[e + 1] += expert_begin_[e];
  slot_row_.resize(slots);
  slot_weight_.resize(slots);
  fill_.assign(expert_begin_.begin(), expert_begin_.end() - 1);
  for (size_t s = 0; s < slots; ++s) {
    const int64_t at = fill_[chosen_[s]]++;
    slot_row_[at] = static_cast<int64_t>(s) / top_k;
    slot_weight_[at] = chosen_weights_[s];
  }
  gathered_.resize(slots * hidden);
  for (size_t s = 0; s < slots; ++s) {
    std::memcpy(gathered_.data() + s * hidden, x + slot_row_[s] * hidden, sizeof(float) * hidden);
  }

  // Each chosen expert on its rows: gate and up in one grouped call, then down.
  gate_.resize(slots * ff);
  up_.resize(slots * ff);
  down_.resize(slots * hidden);
  std::vector<ops::GroupedOutput>& products = products_;
  products.clear();
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t b = expert_begin_[e], end = expert_begin_[e + 1];
    if (b == end) continue;
    const ExpertWeights& ew = w.experts[e];
    products.push_back({&ew.gate_proj, b, end, gate_.data() + b * ff});
    products.push_back({&ew.up_proj, b, end, up_.data() + b * ff});
  }
  ops::matmul_grouped(gathered_.data(), products.data(), products.size());
  ops::silu_mul(gate_.data(), up_.data(), static_cast<int64_t>(slots) * ff, gate_.data());
  products.clear();
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t b = expert_begin_[e], end = expert_begin_[e + 1];
    if (b == end) continue;
    products.push_back({&w.experts[e].down_proj, b, end, down_.data() + b * hidden});
  }
  ops::matmul_grouped(gate_.data(), products.data(), products.size());

  // Slots are in ascending expert order, so every row sums its experts in that order.
  std::fill(y, y + rows * hidden, 0.0f);
  for (size_t s = 0; s < slots; ++s) {
    float* yr = y + slot_row_[s] * hidden;
    const float* d = down_.data() + s * hidden;
    const float ws = slot_weight_[s];
    for (int64_t c = 0; c < hidden; ++c) yr[c] += ws * d[c];
  }
}

}  // namespace qvl
