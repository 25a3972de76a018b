// Test-only: writes a Hugging Face Qwen3-VL folder as a GGUF pair laid out as llama.cpp's
// converter lays it out (convert_hf_to_gguf.py, Qwen3VL text and mmproj classes): the same
// tensor names and ggml shapes, 1-D tensors in F32, the Conv3d patch kernel split into one slice
// per frame, the metadata keys the loader reads, the tokenizer as tokenizer.ggml.* (tokens with
// NORMAL / CONTROL / USER_DEFINED / UNUSED types, merges "a b"). Matrices are stored in `type`;
// Q8_0 and Q4_0 use ggml's reference rounding (d = amax / 127, and d = max / -8).
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/half.h"
#include "base/mapped_file.h"
#include "gguf_test_writer.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "ops/packed_kernels.h"

namespace qvl::testing {

inline std::vector<uint8_t> encode_as(GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> out;
  const auto half = [&](float v) {
    const uint16_t h = ops::kernels::f32_to_f16(v);
    out.push_back(static_cast<uint8_t>(h & 0xff));
    out.push_back(static_cast<uint8_t>(h >> 8));
  };
  if (type == GgmlType::kF32) return f32_bytes(x);
  if (type == GgmlType::kF16 || type == GgmlType::kBF16) {
    for (float v : x) {
      if (type == GgmlType::kF16) {
        half(v);
      } else {
        const uint16_t b = f32_to_bf16(v);
        out.push_back(static_cast<uint8_t>(b & 0xff));
        out.push_back(static_cast<uint8_t>(b >> 8));
      }
    }
    return out;
  }
  for (size_t b = 0; b < x.size(); b += 32) {
    const float* v = x.data() + b;
    if (type == GgmlType::kQ8_0) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[j]));
      const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
      half(d);
      for (int j = 0; j < 32; ++j) {
        out.push_back(static_cast<uint8_t>(static_cast<int8_t>(std::roundf(v[j] * id))));
      }
    } else {  // Q4_0
      float amax = 0, max = 0;
      for (int j = 0; j < 32; ++j) {
        if (std::fabs(v[j]) > amax) {
          amax = std::fabs(v[j]);
          max = v[j];
        }
      }
      const float d = max / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
      half(d);
      for (int j = 0; j < 16; ++j) {
        const auto q = [&](float f) {
          return std::min(15, static_cast<int>(static_cast<int8_t>(f * id + 8.5f)));
        };
        out.push_back(static_cast<uint8_t>(q(v[j]) | (q(v[j + 16]) << 4)));
      }
    }
  }
  return out;
}

// tokenizer.json of the tiny folders is a relative link (or a text file naming the target).
inline std::string tokenizer_json_path(const std::string& dir) {
  std::string path = dir + "/tokenizer.json";
  const std::string text = read_text_file(path);
  if (!text.empty() && text.front() != '{') {
    std::string target = text;
    while (!target.empty() && (target.back() == '\n' || target.back() == '\r')) target.pop_back();
    path = dir + "/" + target;
  }
  return path;
}

// The tokenizer.ggml.* keys the converter writes for a Qwen tokenizer.json: vocab_size entries
// (ids without a token are "[PAD<id>]" UNUSED), vocabulary NORMAL, added tokens CONTROL when
// special or spelled <|...|>, else USER_DEFINED; merges as "a b".
inline void add_tokenizer_keys(GgufBuilder& b, const std::string& tokenizer_json,
                               int64_t vocab_size) {
  const nlohmann::json tok = nlohmann::json::parse(read_text_file(tokenizer_json));
  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<int32_t> types(tokens.size(), 5);  // UNUSED
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = "[PAD" + std::to_string(i) + "]";
  for (const auto& [text, id] : tok["model"]["vocab"].items()) {
    tokens[id.get<size_t>()] = text;
    types[id.get<size_t>()] = 1;  // NORMAL
  }
  for (const auto& a : tok["added_tokens"]) {
    const std::string content = a["content"].get<std::string>();
    const bool looks_special = content.rfind("<|", 0) == 0 && content.size() >= 4 &&
                               content.compare(content.size() - 2, 2, "|>") == 0;
    tokens[a["id"].get<size_t>()] = content;
    types[a["id"].get<size_t>()] = a["special"].get<bool>() || looks_special ? 3 : 4;
  }
  std::vector<std::string> merges;
  for (const auto& m : tok["model"]["merges"]) {
    merges.push_back(m.is_string() ? m.get<std::string>()
                                   : m[0].get<std::string>() + " " + m[1].get<std::string>());
  }
  b.string("tokenizer.ggml.model", "gpt2");
  b.string("tokenizer.ggml.pre", "qwen2");
  b.strings("tokenizer.ggml.tokens", tokens);
  b.i32s("tokenizer.ggml.token_type", types);
  b.strings("tokenizer.ggml.merges", merges);
  b.u32("tokenizer.ggml.eos_token_id", 151645);
  b.u32("tokenizer.ggml.padding_token_id", 151643);
}

class TinyGgufWriter {
 public:
  TinyGgufWriter(const std::string& dir, GgmlType type)
      : dir_(dir),
        type_(type),
        store_(WeightStore::open_folder(dir)),
        config_(load_model_config(dir)) {}

  void write(const std::string& text_path, const std::string& mmproj_path) {
    text_gguf().write(text_path);
    vision_gguf().write(mmproj_path);
  }

 private:
  // 2-D tensors in the chosen type (rows of whole blocks), 1-D in F32.
  void add(GgufBuilder& b, const std::string& gguf, const std::string& hf, bool force_f32 = false) {
    const TensorView& t = store_.get(hf);
    std::vector<int64_t> dims(t.shape.rbegin(), t.shape.rend());
    GgmlType type = t.shape.size() == 1 || force_f32 ? GgmlType::kF32 : type_;
    if ((type == GgmlType::kQ8_0 || type == GgmlType::kQ4_0) && dims[0] % 32 != 0) {
      type = GgmlType::kF16;
    }
    b.tensor(gguf, type, dims, encode_as(type, t.to_f32()));
  }

  GgufBuilder text_gguf() {
    const TextConfig& c = config_.text;
    GgufBuilder b;
    b.string("general.architecture", "qwen3vl");
    b.u32("qwen3vl.block_count", static_cast<uint32_t>(c.num_layers));
    b.u32("qwen3vl.context_length", static_cast<uint32_t>(c.max_position_embeddings));
    b.u32("qwen3vl.embedding_length", static_cast<uint32_t>(c.hidden_size));
    b.u32("qwen3vl.feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
    b.u32("qwen3vl.attention.head_count", static_cast<uint32_t>(c.num_heads));
    b.u32("qwen3vl.attention.head_count_kv", static_cast<uint32_t>(c.num_kv_heads));
    b.u32("qwen3vl.attention.key_length", static_cast<uint32_t>(c.head_dim));
    b.u32("qwen3vl.attention.value_length", static_cast<uint32_t>(c.head_dim));
    b.f32("qwen3vl.rope.freq_base", static_cast<float>(c.rope_theta));
    b.f32("qwen3vl.attention.layer_norm_rms_epsilon", c.rms_norm_eps);
    b.i32s("qwen3vl.rope.dimension_sections",
           {static_cast<int32_t>(c.mrope_section[0]), static_cast<int32_t>(c.mrope_section[1]),
            static_cast<int32_t>(c.mrope_section[2]), 0});
    b.u32("qwen3vl.n_deepstack_layers",
          static_cast<uint32_t>(config_.vision.deepstack_visual_indexes.size()));
    add_tokenizer(b);
    const std::string p = "model.language_model.";
    add(b, "token_embd.weight", p + "embed_tokens.weight");
    add(b, "output_norm.weight", p + "norm.weight");
    if (!config_.tie_word_embeddings && store_.has("lm_head.weight")) {
      add(b, "output.weight", "lm_head.weight");
    }
    const std::vector<std::pair<const char*, const char*>> layer = {
        {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
        {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
        {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
        {"attn_k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"},
        {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
        {"ffn_down", "mlp.down_proj"}};
    for (int64_t i = 0; i < c.num_layers; ++i) {
      for (const auto& [g, h] : layer) {
        add(b, "blk." + std::to_string(i) + "." + g + ".weight",
            p + "layers." + std::to_string(i) + "." + h + ".weight");
      }
    }
    return b;
  }

  void add_tokenizer(GgufBuilder& b) {
    add_tokenizer_keys(b, tokenizer_json_path(dir_), config_.text.vocab_size);
    const nlohmann::json tmpl = nlohmann::json::parse(read_text_file(dir_ + "/chat_template.json"));
    b.string("tokenizer.chat_template", tmpl["chat_template"].get<std::string>());
  }

  GgufBuilder vision_gguf() {
    const VisionConfig& v = config_.vision;
    GgufBuilder b;
    b.string("general.architecture", "clip");
    b.string("clip.projector_type", "qwen3vl_merger");
    b.boolean("clip.has_vision_encoder", true);
    b.boolean("clip.use_gelu", true);
    int64_t side = 1;
    while (side * side < v.num_position_embeddings) ++side;
    b.u32("clip.vision.image_size", static_cast<uint32_t>(side * v.patch_size));
    b.u32("clip.vision.patch_size", static_cast<uint32_t>(v.patch_size));
    b.u32("clip.vision.embedding_length", static_cast<uint32_t>(v.hidden_size));
    b.u32("clip.vision.feed_forward_length", static_cast<uint32_t>(v.intermediate_size));
    b.u32("clip.vision.projection_dim", static_cast<uint32_t>(v.out_hidden_size));
    b.u32("clip.vision.block_count", static_cast<uint32_t>(v.depth));
    b.u32("clip.vision.attention.head_count", static_cast<uint32_t>(v.num_heads));
    b.f32("clip.vision.attention.layer_norm_epsilon", config_.text.rms_norm_eps);
    b.u32("clip.vision.spatial_merge_size", static_cast<uint32_t>(v.spatial_merge_size));
    std::vector<bool> deep(static_cast<size_t>(v.depth), false);
    for (int64_t i : v.deepstack_visual_indexes) deep[static_cast<size_t>(i)] = true;
    b.bools("clip.vision.is_deepstack_layers", deep);
    b.f32s("clip.vision.image_mean", {0.5f, 0.5f, 0.5f});
    b.f32s("clip.vision.image_std", {0.5f, 0.5f, 0.5f});
    const std::string p = "model.visual.";
    // The Conv3d kernel [hidden, C, T, P, P] as T slices [hidden, C, P, P] (F16 or F32).
    const TensorView& conv = store_.get(p + "patch_embed.proj.weight");
    const std::vector<float> k = conv.to_f32();
    const int64_t rows = conv.shape[0] * conv.shape[1], frames = conv.shape[2];
    const int64_t plane = conv.shape[3] * conv.shape[4];
    const GgmlType patch_type = type_ == GgmlType::kF16 ? GgmlType::kF16 : GgmlType::kF32;
    for (int64_t t = 0; t < frames; ++t) {
      std::vector<float> slice(static_cast<size_t>(rows * plane));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < plane; ++i) slice[r * plane + i] = k[(r * frames + t) * plane + i];
      }
      b.tensor(t == 0 ? "v.patch_embd.weight" : "v.patch_embd.weight." + std::to_string(t),
               patch_type, {conv.shape[4], conv.shape[3], conv.shape[1], conv.shape[0]},
               encode_as(patch_type, slice));
    }
    add(b, "v.patch_embd.bias", p + "patch_embed.proj.bias");
    add(b, "v.position_embd.weight", p + "pos_embed.weight");
    const std::vector<std::pair<const char*, const char*>> block = {{"ln1", "norm1"},
                                                                    {"ln2", "norm2"},
                                                                    {"attn_qkv", "attn.qkv"},
                                                                    {"attn_out", "attn.proj"},
                                                                    {"ffn_up", "mlp.linear_fc1"},
                                                                    {"ffn_down", "mlp.linear_fc2"}};
    for (int64_t i = 0; i < v.depth; ++i) {
      for (const auto& [g, h] : block) {
        for (const char* s : {".weight", ".bias"}) {
          add(b, "v.blk." + std::to_string(i) + "." + g + s,
              p + "blocks." + std::to_string(i) + "." + h + s);
        }
      }
    }
    for (const char* s : {".weight", ".bias"}) {
      add(b, std::string("v.post_ln") + s, p + "merger.norm" + s);
      add(b, std::string("mm.0") + s, p + "merger.linear_fc1" + s);
      add(b, std::string("mm.2") + s, p + "merger.linear_fc2" + s);
      for (size_t k2 = 0; k2 < v.deepstack_visual_indexes.size(); ++k2) {
        const std::string g = "v.deepstack." + std::to_string(v.deepstack_visual_indexes[k2]);
        const std::string h = p + "deepstack_merger_list." + std::to_string(k2);
        add(b, g + ".norm" + s, h + ".norm" + s);
        add(b, g + ".fc1" + s, h + ".linear_fc1" + s);
        add(b, g + ".fc2" + s, h + ".linear_fc2" + s);
      }
    }
    return b;
  }

  std::string dir_;
  GgmlType type_;
  WeightStore store_;
  ModelConfig config_;
};

}  // namespace qvl::testing
