#include "engine/model_cost.h"

#include <algorithm>

namespace qvl {
namespace {

// Multiply-adds of a product of one row with the matrix.
double macs(const ops::PackedMatrix& m) {
  return static_cast<double>(m.rows()) * static_cast<double>(m.cols());
}

}  // namespace

ModelCost model_cost(const ModelConfig& config, const TextWeights& text,
                     const VisionWeights& vision, KVType kv_type) {
  const TextConfig& t = config.text;
  const VisionConfig& v = config.vision;
  ModelCost c;
  double text_macs = 0;
  int64_t bytes = 0;
  // A token reads (and multiplies with) the router and only num_experts_per_tok of the experts:
  // their share of the experts' bytes is what decode streams.
  const double active = t.num_experts > 0 ? static_cast<double>(t.num_experts_per_tok) /
                                                static_cast<double>(t.num_experts)
                                          : 1.0;
  const auto add = [&](const ops::PackedMatrix& m, double share) {
    text_macs += share * macs(m);
    bytes += static_cast<int64_t>(share * static_cast<double>(m.size_bytes()));
  };
  for (const TextLayerWeights& l : text.layers) {
    for (const ops::PackedMatrix* m :
         {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) {
      add(*m, 1.0);  // a sparse layer's dense MLP matrices are empty
    }
    if (!l.sparse) continue;
    add(l.sparse->router, 1.0);
    for (const ExpertWeights& e : l.sparse->experts) {
      for (const ops::PackedMatrix* m : {&e.gate_proj, &e.up_proj, &e.down_proj}) add(*m, active);
    }
  }
  c.lm_head_bytes = static_cast<int64_t>(text.lm_head.size_bytes());
  c.decode_weight_bytes = bytes + c.lm_head_bytes;
  c.kv_bytes_per_position =
      t.num_layers * 2 *
      static_cast<int64_t>(kv_position_bytes(kv_type, t.num_kv_heads * t.head_dim));
  c.text_ops_per_token = 2 * text_macs;
  // Scores (q . k) and the weighted sum of values: head_dim multiply-adds each, per query head.
  c.text_attention_ops_per_pair =
      2.0 * 2.0 * static_cast<double>(t.num_heads * t.head_dim) * static_cast<double>(t.num_layers);
  c.lm_head_ops_per_row = 2 * macs(text.lm_head);

  // Vision: patch embedding and blocks per patch; mergers per image token (merge^2 patches).
  c.patches_per_image_token = v.spatial_merge_size * v.spatial_merge_size;
  double patch_macs = macs(vision.patch_embed);
  for (const VisionBlockWeights& b : vision.blocks) {
    patch_macs +=
        macs(b.qkv.weight) + macs(b.proj.weight) + macs(b.fc1.weight) + macs(b.fc2.weight);
  }
  double token_macs = macs(vision.merger.fc1.weight) + macs(vision.merger.fc2.weight);
  for (const MergerWeights& m : vision.deepstack_mergers) {
    token_macs += macs(m.fc1.weight) + macs(m.fc2.weight);
  }
  const double per_token = static_cast<double>(std::max<int64_t>(1, c.patches_per_image_token));
  c.vision_ops_per_patch = 2 * (patch_macs + token_macs / per_token);
  c.vision_attention_ops_per_pair =
      2.0 * 2.0 * static_cast<double>(v.hidden_size) * static_cast<double>(v.depth);
  // The big matrices' type decides the arithmetic (the patch embedding stays at least bf16).
  c.vision_weights = ops::quant_values_name(
      vision.blocks.empty() ? vision.patch_embed.type() : vision.blocks[0].qkv.weight.type());
  return c;
}

}  // namespace qvl
