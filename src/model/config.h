// Model configuration read from a Hugging Face folder (config.json, generation_config.json).
// Variants (2B/4B/8B, tied or untied head) are data here, never class hierarchies.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qvl {

struct TextConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 0;
  std::array<int64_t, 3> mrope_section{};  // frequencies driven by (t, h, w)
  bool mrope_interleaved = true;
  bool attention_bias = false;
  std::string hidden_act;
  // Mixture of experts (Qwen3-VL-30B-A3B, 235B-A22B); num_experts == 0 for dense models. A layer
  // is sparse unless it is in mlp_only_layers or (layer + 1) is not a multiple of
  // decoder_sparse_step (transformers' rule); dense layers use intermediate_size.
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;

  bool sparse_layer(int64_t layer) const;
};

struct VisionConfig {
  int64_t depth = 0;
  int64_t hidden_size = 0;
  int64_t num_heads = 0;
  int64_t intermediate_size = 0;
  int64_t patch_size = 0;
  int64_t temporal_patch_size = 0;
  int64_t spatial_merge_size = 0;
  int64_t in_channels = 3;
  int64_t out_hidden_size = 0;
  int64_t num_position_embeddings = 0;
  std::vector<int64_t> deepstack_visual_indexes;
  std::string hidden_act;
  float layer_norm_eps = 1e-6f;
};

struct ModelConfig {
  TextConfig text;
  VisionConfig vision;
  // Declared by config.json; whether an lm_head.weight exists is checked when loading weights.
  bool tie_word_embeddings = false;
  int64_t image_token_id = 0;
  int64_t video_token_id = 0;
  int64_t vision_start_token_id = 0;
  int64_t vision_end_token_id = 0;
};

// Sampling defaults shipped with the model (all optional in the file).
struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> pad_token_id;
  bool do_sample = false;
  float temperature = 1.0f;
  float top_p = 1.0f;
  int64_t top_k = 0;
  float repetition_penalty = 1.0f;
};

// Parses <dir>/config.json. Unsupported architectures and missing fields throw a clear Error.
ModelConfig load_model_config(const std::string& dir);
ModelConfig parse_model_config(const std::string& json_text, const std::string& origin);
// Parses <dir>/generation_config.json if present (defaults otherwise; eos falls back to the
// text config's eos_token_id).
GenerationConfig load_generation_config(const std::string& dir);
GenerationConfig parse_generation_config(const std::string& json_text, const std::string& origin);
// What load_generation_config does, from texts: generation_config.json (nullopt when the model
// has none) and config.json (for the eos fallback).
GenerationConfig generation_config_from_texts(const std::optional<std::string>& generation_json,
                                              const std::string& generation_origin,
                                              const std::string& config_json,
                                              const std::string& config_origin);

}  // namespace qvl
