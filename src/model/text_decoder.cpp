#include "model/text_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "base/error.h"
#include "base/stage_profile.h"
#include "base/thread_pool.h"
#include "model/fused_experts.h"
#include "model/weights_util.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/kv_q8.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/packed_matrix.h"
#include "ops/rope.h"

namespace qvl {

namespace {

// The router and experts of a sparse layer `layer`, under the per-expert names; experts a
// checkpoint stores fused are split into them first (model/fused_experts.h).
SparseMlpWeights load_sparse_mlp(const TextConfig& c, const WeightStore& store, int64_t layer,
                                 ops::QuantType type,
                                 std::vector<std::shared_ptr<const void>>& owned) {
  const int64_t h = c.hidden_size, ff = c.moe_intermediate_size;
  const std::string mlp = "model.language_model.layers." + std::to_string(layer) + ".mlp.";
  // Experts stored fused are read from their split copies.
  std::optional<WeightStore> split_store;
  const WeightStore* experts_store = &store;
  std::optional<SplitExperts> split = split_fused_layer(c, store, layer);
  if (split) {
    split_store = WeightStore::from_views(std::move(split->views), split->bytes, "split experts");
    experts_store = &*split_store;
  }
  SparseMlpWeights w;
  w.router = packed_weight(store, mlp + "gate.weight", c.num_experts, h, sparse_router_type(type));
  for (int64_t e = 0; e < c.num_experts; ++e) {
    const std::string x = mlp + "experts." + std::to_string(e) + ".";
    ExpertWeights ew;
    ew.gate_proj = packed_weight(*experts_store, x + "gate_proj.weight", ff, h, type);
    ew.up_proj = packed_weight(*experts_store, x + "up_proj.weight", ff, h, type);
    ew.down_proj = packed_weight(*experts_store, x + "down_proj.weight", h, ff, type);
    w.experts.push_back(std::move(ew));
  }
  // Exact matrices view the split copies, which must then live as long as the weights.
  bool viewed = false;
  for (const ExpertWeights& e : w.experts) {
    viewed = viewed || e.gate_proj.type() == ops::QuantType::kExact ||
             e.down_proj.type() == ops::QuantType::kExact;
  }
  if (split && viewed) owned.push_back(split->bytes);
  return w;
}

}  // namespace

TextWeights load_text_weights(const ModelConfig& config, const WeightStore& store,
                              const WeightTypes& types) {
  const TextConfig& c = config.text;
  const std::string p = "model.language_model.";
  const int64_t h = c.hidden_size, q_dim = c.num_heads * c.head_dim;
  const int64_t kv_dim = c.num_kv_heads * c.head_dim, ff = c.intermediate_size;
  TextWeights w;
  w.embed_tokens = matrix_weight(store, p + "embed_tokens.weight", c.vocab_size, h);
  // Tied when the config says so, or when the checkpoint simply has no separate head.
  w.tied_lm_head = config.tie_word_embeddings || !store.has("lm_head.weight");
  w.lm_head = ops::PackedMatrix::pack(
      w.tied_lm_head ? w.embed_tokens : matrix_weight(store, "lm_head.weight", c.vocab_size, h),
      fitting_type(stored_type(types.lm_head), h));
  w.final_norm = vector_weight(store, p + "norm.weight", h);
  const ops::QuantType text = stored_type(types.text);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string l = p + "layers." + std::to_string(i) + ".";
    TextLayerWeights lw;
    lw.q_proj = packed_weight(store, l + "self_attn.q_proj.weight", q_dim, h, text);
    lw.k_proj = packed_weight(store, l + "self_attn.k_proj.weight", kv_dim, h, text);
    lw.v_proj = packed_weight(store, l + "self_attn.v_proj.weight", kv_dim, h, text);
    lw.o_proj = packed_weight(store, l + "self_attn.o_proj.weight", h, q_dim, text);
    if (c.sparse_layer(i)) {
      lw.sparse = load_sparse_mlp(c, store, i, text, w.owned);
    } else {
      lw.gate_proj = packed_weight(store, l + "mlp.gate_proj.weight", ff, h, text);
      lw.up_proj = packed_weight(store, l + "mlp.up_proj.weight", ff, h, text);
      lw.down_proj = packed_weight(store, l + "mlp.down_proj.weight", h, ff, text);
    }
    lw.input_norm = vector_weight(store, l + "input_layernorm.weight", h);
    lw.post_attention_norm = vector_weight(store, l + "post_attention_layernorm.weight", h);
    lw.q_norm = vector_weight(store, l + "self_attn.q_norm.weight", c.head_dim);
    lw.k_norm = vector_weight(store, l + "self_attn.k_norm.weight", c.head_dim);
    w.layers.push_back(std::move(lw));
  }
  return w;
}

TextDecoder::TextDecoder(const TextConfig& config, const TextWeights& weights)
    : config_(config), w_(weights), rope_(config) {}

void TextDecoder::embed(const int64_t* ids, int64_t n, float* out) const {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= config_.vocab_size) {
      fail(ErrorCode::kInvalidArgument, "token id " + std::to_string(ids[i]) +
                                            " is outside the vocabulary (size " +
                                            std::to_string(config_.vocab_size) + ")");
    }
    ops::weight_row_to_f32(w_.embed_tokens, ids[i], out + i * config_.hidden_size);
  }
}

bool TextDecoder::exact_weights() const {
  // Any packed matrix means fast weights (a matrix too narrow to pack stays exact among them).
  if (w_.lm_head.type() != ops::QuantType::kExact) return false;
  bool exact = true;
  for (const TextLayerWeights& l : w_.layers) {
    for_each_layer_matrix(l, [&](const ops::PackedMatrix& m) {
      exact = exact && m.type() == ops::QuantType::kExact;
    });
  }
  return exact;
}

KVType TextDecoder::kv_type() const {
  return exact_weights() ? KVType::kF32 : fast_kv_type_;
}

void TextDecoder::use_kv_type(KVType type) {
  if (type == KVType::kF32) fail(ErrorCode::kInvalidArgument, "the KV cache type is f16 or q8");
  if (exact_weights() && type != KVType::kF32) {
    fail(ErrorCode::kInvalidArgument,
         std::string("exact weights keep an fp32 KV cache (the parity oracle); --kv-type ") +
             kv_type_name(type) + " needs bf16, q8 or q4 weights");
  }
  if (type == KVType::kQ8 && config_.head_dim % ops::kKvQ8Block != 0) {
    fail(ErrorCode::kInvalidArgument,
         "an 8-bit KV cache needs head_dim in multiples of " + std::to_string(ops::kKvQ8Block) +
             "; this model's is " + std::to_string(config_.head_dim) + " (use --kv-type f16)");
  }
  fast_kv_type_ = type;
}

void TextDecoder::plan_segments(const std::vector<BatchEntry>& entries) {
  segments_.clear();
  int64_t row = 0;
  bool decode_run = false;  // the last segment is a run of decode-like entries
  for (const BatchEntry& e : entries) {
    QVL_CHECK(e.rows > 0 && e.cache != nullptr);
    QVL_CHECK(!e.speculative || e.rows <= kMaxDecodeRows);
    const bool decode_like = e.rows == 1 || e.speculative;
    if (decode_like && decode_run &&
        segments_.back().end - segments_.back().begin + e.rows <= kMaxDecodeRows) {
      segments_.back().end += e.rows;
    } else {
      segments_.push_back({row, row + e.rows});
      decode_run = decode_like;
    }
    row += e.rows;
  }
}

void TextDecoder::matmul_segments(const float* x, std::initializer_list<Product> products) const {
  QVL_CHECK(products.size() > 0 && products.size() <= 3);
  const int64_t in = products.begin()->w->cols();
  ops::MatmulOutput outputs[3];
  for (const Segment& s : segments_) {
    size_t count = 0;
    for (const Product& p : products) {
      outputs[count++] = {p.w, nullptr, p.y + s.begin * p.w->rows()};
    }
    // Matrices that share the input run in one parallel region (one dispatch in decode).
    ops::matmul_multi(x + s.begin * in, s.end - s.begin, outputs, count);
  }
}

void TextDecoder::attention_block(int64_t layer, const std::vector<BatchEntry>& entries) {
  const TextLayerWeights& lw = w_.layers[layer];
  const int64_t hd = config_.head_dim, nh = config_.num_heads, nkv = config_.num_kv_heads;
  const int64_t n = segments_.empty() ? 0 : segments_.back().end;
  matmul_segments(normed_.data(), {{&lw.q_proj, q_}, {&lw.k_proj, k_}, {&lw.v_proj, v_}});
  // Per-head RMSNorm on q and k, then rotary, then keys/values go into the cache.
  ops::rms_norm(q_, lw.q_norm.data(), config_.rms_norm_eps, n * nh, hd, q_);
  ops::rms_norm(k_, lw.k_norm.data(), config_.rms_norm_eps, n * nkv, hd, k_);
  const int64_t half = hd / 2;
  // Rows in runs of at least 16 on the pool (a decode step's row stays on its thread).
  ThreadPool::global().parallel_for(
      static_cast<size_t>(n),
      [&](size_t b, size_t e) {
        for (auto t = static_cast<int64_t>(b); t < static_cast<int64_t>(e); ++t) {
          ops::rope_rotate_half(q_ + t * nh * hd, nh, hd, cos_.data() + t * half,
                                sin_.data() + t * half);
          ops::rope_rotate_half(k_ + t * nkv * hd, nkv, hd, cos_.data() + t * half,
                                sin_.data() + t * half);
        }
      },
      16);
  const ops::AttentionShape shape{nh, nkv, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
  // A speculative entry's rows attend in blocks small enough that each row computes as if alone.
  const int64_t block = ops::attention_row_invariant_queries(shape);
  const auto write_and_attend = [&](const BatchEntry& e, int64_t row) {
    e.cache->write(layer, k_ + row * nkv * hd, v_ + row * nkv * hd, e.rows);
    const int64_t step = e.speculative ? block : e.rows;
    for (int64_t r = 0; r < e.rows; r += step) {
      const int64_t m = std::min(step, e.rows - r);
      e.cache->attend(layer, q_ + (row + r) * nh * hd, r, m, shape, attn_ + (row + r) * nh * hd);
    }
  };
  const bool decode_batch =
      entries.size() > 1 && std::all_of(entries.begin(), entries.end(), [](const BatchEntry& e) {
        return e.rows == 1 || e.speculative;
      });
  if (decode_batch) {
    // Decode-like entries (a batched decode step): the sequences share one pool dispatch, each
    // attending within its task, instead of a small dispatch per sequence (8 streams: 13% of a
    // step). The attention splits its work by the pool's size, not by who runs it: same bits.
    entry_rows_.resize(entries.size());
    int64_t row = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      entry_rows_[i] = row;
      row += entries[i].rows;
    }
    ThreadPool::global().parallel_for(entries.size(), [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) write_and_attend(entries[i], entry_rows_[i]);
    });
  } else {
    int64_t row = 0;
    for (const BatchEntry& e : entries) {
      write_and_attend(e, row);
      row += e.rows;
    }
  }
  matmul_segments(attn_, {{&lw.o_proj, proj_}});
}

void TextDecoder::mlp_block(int64_t layer, int64_t n) {
  const TextLayerWeights& lw = w_.layers[layer];
  if (lw.sparse) return sparse_mlp_block(*lw.sparse);
  const int64_t ff = config_.intermediate_size;
  matmul_segments(normed_.data(), {{&lw.gate_proj, gate_.data()}, {&lw.up_proj, up_}});
  ops::silu_mul(gate_.data(), up_, n * ff, gate_.data());
  matmul_segments(gate_.data(), {{&lw.down_proj, proj_}});
}

void TextDecoder::sparse_mlp_block(const SparseMlpWeights& w) {
  // Per segment, so that a row's experts see the same batches as the dense matmuls' rows do
  // (batch invariance). The output rows overwrite the input rows (proj_ is normed_): forward
  // reads all of its input before it writes.
  const int64_t h = config_.hidden_size;
  for (const Segment& s : segments_) {
    sparse_mlp_.forward(w, config_.num_experts_per_tok, normed_.data() + s.begin * h,
                        s.end - s.begin, proj_ + s.begin * h);
  }
}

void TextDecoder::forward(const float* x, int64_t n, const int64_t* positions, KVSequence& cache,
                          const LayerFeatureAdds* adds, float* out, const TensorTap& tap) {
  forward_batch(x, {BatchEntry{&cache, n, positions}}, adds, out, tap);
}

void TextDecoder::forward_batch(const float* x, const std::vector<BatchEntry>& entries,
                                const LayerFeatureAdds* adds, float* out, const TensorTap& tap) {
  int64_t n = 0;
  for (const BatchEntry& e : entries) n += e.rows;
  batch_hidden_.resize(static_cast<size_t>(n * config_.hidden_size));
  std::memcpy(batch_hidden_.data(), x, sizeof(float) * n * config_.hidden_size);
  if (tap) tap("text.inputs_embeds", batch_hidden_.data(), n, config_.hidden_size);
  forward_layers(batch_hidden_.data(), entries, adds, 0, config_.num_layers, out, tap);
}

void TextDecoder::forward_layers(float* hs, const std::vector<BatchEntry>& entries,
                                 const LayerFeatureAdds* adds, int64_t layer_begin,
                                 int64_t layer_end, float* out, const TensorTap& tap) {
  QVL_CHECK(0 <= layer_begin && layer_begin < layer_end && layer_end <= config_.num_layers);
  const int64_t h = config_.hidden_size;
  const int64_t q_dim = config_.num_heads * config_.head_dim;
  int64_t n = 0;
  for (const BatchEntry& e : entries) n += e.rows;
  const size_t rows = static_cast<size_t>(n);
  const size_t kv = static_cast<size_t>(kv_width()),
               ff = static_cast<size_t>(config_.intermediate_size);
  normed_.resize(rows * h);
  proj_ = normed_.data();
  attention_or_up_.resize(rows * std::max(2 * static_cast<size_t>(q_dim) + 2 * kv, ff));
  q_ = attention_or_up_.data();
  k_ = q_ + rows * q_dim;
  v_ = k_ + rows * kv;
  attn_ = v_ + rows * kv;
  up_ = attention_or_up_.data();
  gate_.resize(rows * ff);
  cos_.resize(rows * (config_.head_dim / 2));
  sin_.resize(rows * (config_.head_dim / 2));
  plan_segments(entries);

  // Positions of all entries, stream-major like each entry's own.
  batch_positions_.resize(3 * rows);
  int64_t row = 0;
  for (const BatchEntry& e : entries) {
    for (int64_t s = 0; s < 3; ++s) {
      std::copy(e.positions + s * e.rows, e.positions + (s + 1) * e.rows,
                batch_positions_.begin() + s * n + row);
    }
    row += e.rows;
    e.cache->reserve_more(e.rows);  // idempotent: later layer ranges find the room made
  }
  rope_.tables(batch_positions_.data(), n, cos_.data(), sin_.data());

  for (int64_t layer = layer_begin; layer < layer_end; ++layer) {
    const TextLayerWeights& lw = w_.layers[layer];
    ops::rms_norm(hs, lw.input_norm.data(), config_.rms_norm_eps, n, h, normed_.data());
    attention_block(layer, entries);
    for (size_t i = 0; i < rows * h; ++i) hs[i] += proj_[i];
    ops::rms_norm(hs, lw.post_attention_norm.data(), config_.rms_norm_eps, n, h, normed_.data());
    mlp_block(layer, n);
    for (size_t i = 0; i < rows * h; ++i) hs[i] += proj_[i];
    if (tap) tap("text.layer_out." + std::to_string(layer), hs, n, h);
    if (adds && layer < static_cast<int64_t>(adds->per_layer.size()) && adds->per_layer[layer]) {
      const float* f = adds->per_layer[layer];
      for (size_t r = 0; r < adds->rows.size(); ++r) {
        float* dst = hs + adds->rows[r] * h;
        for (int64_t c = 0; c < h; ++c) dst[c] += f[r * h + c];
      }
      if (tap) tap("text.layer_out_plus_deepstack." + std::to_string(layer), hs, n, h);
    }
  }
  if (layer_end < config_.num_layers) return;
  for (const BatchEntry& e : entries) {
    if (!e.speculative) e.cache->commit(e.rows);
  }
  ops::rms_norm(hs, w_.final_norm.data(), config_.rms_norm_eps, n, h, out);
  if (tap) tap("text.final_norm", out, n, h);
}

void TextDecoder::logits(const float* hidden, int64_t rows, float* out) const {
  const profile::StageScope stage(profile::Work::kLmHead);
  ops::matmul(hidden, rows, w_.lm_head, nullptr, out);
}

}  // namespace qvl
