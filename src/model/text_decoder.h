// The Qwen3 text decoder of Qwen3-VL in exact mode (fp32 math on the stored weights).
// One forward call appends n tokens to a KV cache: n > 1 is a prefill chunk, n == 1 a decode.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <vector>

#include "base/aligned_buffer.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/mrope.h"
#include "model/safetensors.h"
#include "model/sparse_mlp.h"
#include "model/tensor_tap.h"
#include "model/weight_types.h"
#include "ops/packed_matrix.h"
#include "ops/weight_ref.h"

namespace qvl {

struct TextLayerWeights {
  ops::PackedMatrix q_proj, k_proj, v_proj, o_proj;
  // The dense MLP; empty in a sparse layer, which has `sparse` instead.
  ops::PackedMatrix gate_proj, up_proj, down_proj;
  std::optional<SparseMlpWeights> sparse;
  std::vector<float> input_norm, post_attention_norm, q_norm, k_norm;
};

// fn(const ops::PackedMatrix&) for every matrix of the layer (attention, then the dense MLP's or
// the router and every expert's).
template <typename Fn>
void for_each_layer_matrix(const TextLayerWeights& l, Fn&& fn) {
  for (const ops::PackedMatrix* m : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj}) fn(*m);
  if (!l.sparse) {
    for (const ops::PackedMatrix* m : {&l.gate_proj, &l.up_proj, &l.down_proj}) fn(*m);
    return;
  }
  fn(l.sparse->router);
  for (const ExpertWeights& e : l.sparse->experts) {
    for (const ops::PackedMatrix* m : {&e.gate_proj, &e.up_proj, &e.down_proj}) fn(*m);
  }
}

struct TextWeights {
  ops::WeightRef embed_tokens;  // [vocab, hidden]
  ops::PackedMatrix lm_head;    // [vocab, hidden]; the embedding itself when tied
  bool tied_lm_head = false;
  std::vector<float> final_norm;
  std::vector<TextLayerWeights> layers;
  // Copies the matrices view (experts a checkpoint stores fused, split per expert).
  std::vector<std::shared_ptr<const void>> owned;
};

// Loads "model.language_model.*" (and lm_head.weight unless tied or absent) with shape checks.
TextWeights load_text_weights(const ModelConfig& config, const WeightStore& store,
                              const WeightTypes& types = {});

// Features added to the hidden state after decoder layer k (DeepStack): rows are indexes into
// the current forward's tokens; per_layer[k] is [rows.size(), hidden].
struct LayerFeatureAdds {
  std::vector<int64_t> rows;
  std::vector<const float*> per_layer;
};

// One sequence's share of a batched forward: the next `rows` rows of the input, at positions
// [3, rows] (stream-major), appended to `cache`.
struct BatchEntry {
  KVSequence* cache = nullptr;
  int64_t rows = 0;
  const int64_t* positions = nullptr;
  // Speculative decoding: a decoding sequence's next token followed by draft tokens (at most
  // kMaxDecodeRows rows). Every row is computed exactly as a one-row decode step at its position
  // would be, and the rows are written but not committed: the caller commits the accepted ones.
  bool speculative = false;
};

class TextDecoder {
 public:
  TextDecoder(const TextConfig& config, const TextWeights& weights);

  const TextConfig& config() const { return config_; }
  // A cache in fp32 for exact weights (the parity oracle), in half for the fast weight types
  // unless use_kv_type chose 8-bit.
  KVCache new_cache() const { return KVCache(config_.num_layers, kv_width(), kv_type()); }
  KVType kv_type() const;
  // Chooses the KV storage of the fast weight types (f16 or q8). Throws Error(kInvalidArgument)
  // for exact weights (their cache stays fp32) or a head_dim 8-bit blocks do not divide.
  void use_kv_type(KVType type);

  // Embedding rows of the token ids into out [n, hidden].
  void embed(const int64_t* ids, int64_t n, float* out) const;

  // Runs n tokens with input embeddings x [n, hidden] and positions [3, n], appending to cache.
  // Writes the final-norm hidden states [n, hidden] to out. adds may be null. tap may be empty.
  void forward(const float* x, int64_t n, const int64_t* positions, KVSequence& cache,
               const LayerFeatureAdds* adds, float* out, const TensorTap& tap = {});

  // Several sequences in one pass (continuous batching): x holds the entries' rows one after
  // another, so matrix weights are read once for all of them. Batch invariance: a sequence's
  // result does not depend on the others. Single-row entries (decode) that follow each other
  // share matmuls of at most kMaxDecodeRows rows (the small-batch kernels compute each row the
  // same way for any such count), and so do speculative entries; every other multi-row entry (a
  // prefill chunk) has its own. adds rows index the batch's rows.
  static constexpr int64_t kMaxDecodeRows = 15;
  void forward_batch(const float* x, const std::vector<BatchEntry>& entries,
                     const LayerFeatureAdds* adds, float* out, const TensorTap& tap = {});
  // forward_batch one range of layers at a time, so a prompt chunk's work can be spread over
  // several scheduler steps with the same arithmetic as in one call: hs [rows, hidden] holds the
  // hidden states between calls (the input embeddings before layer 0). Call with ranges
  // [0, a), [a, b), ... [z, num_layers) on the same entries and caches, nothing else touching
  // those caches in between; the last range commits the rows to the caches and writes the
  // final-norm hidden states to out.
  void forward_layers(float* hs, const std::vector<BatchEntry>& entries,
                      const LayerFeatureAdds* adds, int64_t layer_begin, int64_t layer_end,
                      float* out, const TensorTap& tap = {});

  // logits [rows, vocab] = hidden [rows, hidden] * lm_head^T.
  void logits(const float* hidden, int64_t rows, float* out) const;

 private:
  int64_t kv_width() const { return config_.num_kv_heads * config_.head_dim; }
  bool exact_weights() const;
  KVType fast_kv_type_ = KVType::kF16;
  // Row ranges [begin, end) of the batch that share one matmul call.
  struct Segment {
    int64_t begin, end;
  };
  void plan_segments(const std::vector<BatchEntry>& entries);
  struct Product {
    const ops::PackedMatrix* w;
    float* y;  // [rows, w->rows()]
  };
  // y = x * w^T for every product, one call per segment.
  void matmul_segments(const float* x, std::initializer_list<Product> products) const;
  void attention_block(int64_t layer, const std::vector<BatchEntry>& entries);
  void mlp_block(int64_t layer, int64_t n);
  void sparse_mlp_block(const SparseMlpWeights& w);

  std::vector<Segment> segments_;
  SparseMlp sparse_mlp_;
  std::vector<int64_t> entry_rows_;  // first batch row of each entry (decode-like batches)
  std::vector<int64_t> batch_positions_;
  TextConfig config_;
  const TextWeights& w_;
  MRope rope_;
  // Activations, reused across calls (sized for the largest n seen). Buffers whose lives within a
  // layer do not overlap share memory (~8 MB less for a 256-row prompt chunk of the 2B model):
  // the attention's q, k, v and output with the MLP's up projection, each block's input norm
  // with its output projection.
  AlignedBuffer<float> batch_hidden_, normed_, attention_or_up_, gate_, cos_, sin_;
  float *q_ = nullptr, *k_ = nullptr, *v_ = nullptr, *attn_ = nullptr;  // in attention_or_up_
  float* up_ = nullptr;                                                 // in attention_or_up_
  float* proj_ = nullptr;                                               // in normed_
};

}  // namespace qvl
