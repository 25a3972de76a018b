// The mixture-of-experts MLP of Qwen3-VL-MoE (transformers 4.57.6, Qwen3VLMoeTextSparseMoeBlock):
//   p = softmax(x * router^T)                 over all experts, fp32
//   S = the top_k experts by p, w_e = p_e / sum_{e' in S} p_e'
//   y = sum_{e in S, ascending e} w_e * down_e(silu(gate_e(x)) * up_e(x))
// Tokens are grouped by expert so that each chosen expert's matrices are read once per call for
// all of its tokens, and an expert nobody chose is not read at all.
#pragma once

#include <cstdint>
#include <vector>

#include "base/aligned_buffer.h"
#include "ops/packed_matrix.h"

namespace qvl {

// One expert: a SwiGLU MLP of width moe_intermediate_size.
struct ExpertWeights {
  ops::PackedMatrix gate_proj, up_proj, down_proj;
};

struct SparseMlpWeights {
  ops::PackedMatrix router;  // [num_experts, hidden]
  std::vector<ExpertWeights> experts;
};

// The stored type of a router next to experts of `experts_type`: at least 8-bit, since its
// errors change which experts run.
inline ops::QuantType sparse_router_type(ops::QuantType experts_type) {
  return experts_type == ops::QuantType::kQ4Strips ? ops::QuantType::kQ8Strips
         : experts_type == ops::QuantType::kQ4     ? ops::QuantType::kQ8
                                                   : experts_type;
}

// The experts a token chose and their normalised weights, best first.
struct ExpertChoice {
  std::vector<int32_t> experts;
  std::vector<float> weights;
};
// Routing of one token from its router logits [num_experts] (the softmax, top-k and
// normalisation above). Ties go to the lower expert index.
void route_token(const float* logits, int64_t num_experts, int64_t top_k, ExpertChoice& out);

class SparseMlp {
 public:
  // y [n, hidden] = the sparse MLP of x [n, hidden]. A row's result does not depend on the
  // other rows of the call (each expert's products are batch invariant, and every row sums its
  // experts in ascending order), as long as the matmul of each expert's rows is.
  void forward(const SparseMlpWeights& w, int64_t top_k, const float* x, int64_t n, float* y);

  // The experts of each row of the last forward, [n * top_k] (for tests and statistics).
  const std::vector<int32_t>& last_experts() const { return chosen_; }

 private:
  AlignedBuffer<float> logits_, gathered_, gate_, up_, down_;
  std::vector<int32_t> chosen_;
  std::vector<float> chosen_weights_;
  std::vector<int64_t> expert_begin_, fill_, slot_row_;
  std::vector<ops::GroupedOutput> products_;
  std::vector<float> slot_weight_;
  ExpertChoice choice_;
};

}  // namespace qvl
