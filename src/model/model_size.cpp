#include "model/model_size.h"

#include <cstdio>

namespace qvl {

ModelParameters model_parameters(const ModelConfig& config) {
  const TextConfig& t = config.text;
  const int64_t q_width = t.num_heads * t.head_dim;
  const int64_t kv_width = t.num_kv_heads * t.head_dim;
  const int64_t attention = 2 * t.hidden_size               // input and post-attention norms
                            + q_width * t.hidden_size       // q_proj
                            + 2 * kv_width * t.hidden_size  // k_proj, v_proj
                            + t.hidden_size * q_width       // o_proj
                            + 2 * t.head_dim;               // q_norm, k_norm
  const int64_t dense_mlp = 3 * t.intermediate_size * t.hidden_size;  // gate, up, down
  const int64_t expert = 3 * t.moe_intermediate_size * t.hidden_size;
  const int64_t router = t.num_experts * t.hidden_size;
  ModelParameters p;
  const int64_t embedding = t.vocab_size * t.hidden_size;
  p.text = embedding + t.hidden_size + (config.tie_word_embeddings ? 0 : embedding);
  p.text_active = p.text;
  for (int64_t layer = 0; layer < t.num_layers; ++layer) {
    const bool sparse = t.sparse_layer(layer);
    p.text += attention + (sparse ? router + t.num_experts * expert : dense_mlp);
    p.text_active += attention + (sparse ? router + t.num_experts_per_tok * expert : dense_mlp);
  }

  const VisionConfig& v = config.vision;
  const int64_t d = v.hidden_size;
  auto linear = [](int64_t out, int64_t in) { return out * in + out; };
  const int64_t block = 2 * 2 * d                          // norm1, norm2 (weight and bias)
                        + linear(3 * d, d) + linear(d, d)  // qkv, proj
                        + linear(v.intermediate_size, d) + linear(d, v.intermediate_size);
  const int64_t merged = d * v.spatial_merge_size * v.spatial_merge_size;
  const int64_t merger_layers = linear(merged, merged) + linear(v.out_hidden_size, merged);
  const int64_t patch = v.in_channels * v.temporal_patch_size * v.patch_size * v.patch_size;
  p.vision = linear(d, patch) + v.num_position_embeddings * d + v.depth * block + 2 * d +
             merger_layers  // the merger normalises each patch before the concat
             + static_cast<int64_t>(v.deepstack_visual_indexes.size()) *
                   (2 * merged + merger_layers);  // DeepStack mergers normalise the concat
  return p;
}

std::string model_size_label(const ModelConfig& config) {
  const ModelParameters p = model_parameters(config);
  if (config.text.num_experts == 0) return model_size_label(p.total());
  // Mixtures are named by their language model's total and (rounded) active parameters:
  // 30B-A3B, 235B-A22B.
  char active[32];
  std::snprintf(active, sizeof active, "-A%.0fB", static_cast<double>(p.text_active) / 1e9);
  return model_size_label(p.text) + (p.text_active >= 500'000'000 ? active : "");
}

std::string model_size_label(int64_t parameters) {
  char text[32];
  if (parameters >= 32'000'000'000 && parameters < 34'000'000'000) return "32B";
  if (parameters >= 1'000'000'000) {
    std::snprintf(text, sizeof text, "%lldB", static_cast<long long>(parameters / 1'000'000'000));
  } else if (parameters >= 1'000'000) {
    std::snprintf(text, sizeof text, "%lldM", static_cast<long long>(parameters / 1'000'000));
  } else {
    std::snprintf(text, sizeof text, "%lldK", static_cast<long long>(parameters / 1'000));
  }
  return text;
}

}  // namespace qvl
