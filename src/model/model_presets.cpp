#include "model/model_presets.h"

#include <algorithm>
#include <functional>

#include "base/error.h"
#include "base/half.h"
#include "base/thread_pool.h"

namespace qvl {
namespace {

using ordered_json = nlohmann::ordered_json;

struct Preset {
  int64_t hidden, layers, heads, kv_heads, head_dim, ff;
  std::vector<int64_t> mrope;
  int64_t v_depth, v_hidden, v_heads, v_ff;
  std::vector<int64_t> deepstack;
  bool tied;  // false: a separate lm_head.weight
  // Mixture of experts (0 experts: dense).
  int64_t experts = 0, top_k = 0, moe_ff = 0;
  std::vector<int64_t> mlp_only = {};
};

// The Qwen3-VL values are those of the published config.json files (docs/model-family.md).
Preset preset_by_name(const std::string& name) {
  if (name == "tiny") return {64, 4, 4, 2, 16, 128, {4, 2, 2}, 4, 32, 2, 64, {0, 1, 2}, true};
  // Widths that are not multiples of 32 (text 80 and 112, vision 48 and 72; head_dim 32 so the
  // 8-bit KV cache can run on it too): the fast weight
  // types cannot pack those matrices, which must then stay exact.
  if (name == "tiny-odd") return {80, 3, 4, 2, 32, 112, {8, 4, 4}, 3, 48, 2, 72, {0, 1}, true};
  if (name == "qwen3-vl-2b") {
    return {2048, 28, 16, 8, 128, 6144, {24, 20, 20}, 24, 1024, 16, 4096, {5, 11, 17}, true};
  }
  if (name == "qwen3-vl-4b") {
    return {2560, 36, 32, 8, 128, 9728, {24, 20, 20}, 24, 1024, 16, 4096, {5, 11, 17}, true};
  }
  // 8B and 32B: a 27-block vision tower of width 1152 whose FFN (4304) is not a multiple of 32,
  // DeepStack taps at blocks 8, 16 and 24, and an untied head.
  if (name == "qwen3-vl-8b") {
    return {4096, 36, 32, 8, 128, 12288, {24, 20, 20}, 27, 1152, 16, 4304, {8, 16, 24}, false};
  }
  if (name == "qwen3-vl-32b") {
    return {5120, 64, 64, 8, 128, 25600, {24, 20, 20}, 27, 1152, 16, 4304, {8, 16, 24}, false};
  }
  // Mixtures of experts: tiny-moe (8 experts, 2 active, layer 1 dense) for tests; 30B-A3B with
  // the published shapes (128 experts of width 768, 8 active, every layer sparse).
  if (name == "tiny-moe") {
    return {64, 4, 4, 2, 16, 128, {4, 2, 2}, 4, 32, 2, 64, {0, 1, 2}, false, 8, 2, 64, {1}};
  }
  if (name == "qwen3-vl-30b-a3b") {
    return {2048, 48,   32,          4,     128, 6144, {24, 20, 20}, 27, 1152,
            16,   4304, {8, 16, 24}, false, 128, 8,    768,          {}};
  }
  std::string names;
  for (const std::string& n : model_preset_names()) names += (names.empty() ? "" : ", ") + n;
  fail(ErrorCode::kInvalidArgument, "unknown preset '" + name + "' (use " + names + ")");
}

constexpr int64_t kVocab = 151936;

ordered_json config_json(const Preset& p) {
  ordered_json text = {
      {"attention_bias", false},
      {"attention_dropout", 0.0},
      {"bos_token_id", 151643},
      {"dtype", "bfloat16"},
      {"eos_token_id", 151645},
      {"head_dim", p.head_dim},
      {"hidden_act", "silu"},
      {"hidden_size", p.hidden},
      {"initializer_range", 0.02},
      {"intermediate_size", p.ff},
      {"max_position_embeddings", 262144},
      {"model_type", "qwen3_vl_text"},
      {"num_attention_heads", p.heads},
      {"num_hidden_layers", p.layers},
      {"num_key_value_heads", p.kv_heads},
      {"rms_norm_eps", 1e-6},
      {"rope_scaling",
       {{"mrope_interleaved", true}, {"mrope_section", p.mrope}, {"rope_type", "default"}}},
      {"rope_theta", 5000000.0},
      {"tie_word_embeddings", p.tied},
      {"use_cache", true},
      {"vocab_size", kVocab}};
  ordered_json vision = {{"deepstack_visual_indexes", p.deepstack},
                         {"depth", p.v_depth},
                         {"hidden_act", "gelu_pytorch_tanh"},
                         {"hidden_size", p.v_hidden},
                         {"in_channels", 3},
                         {"initializer_range", 0.02},
                         {"intermediate_size", p.v_ff},
                         {"model_type", "qwen3_vl"},
                         {"num_heads", p.v_heads},
                         {"num_position_embeddings", 2304},
                         {"out_hidden_size", p.hidden},
                         {"patch_size", 16},
                         {"spatial_merge_size", 2},
                         {"temporal_patch_size", 2}};
  const bool moe = p.experts > 0;
  if (moe) {
    text["decoder_sparse_step"] = 1;
    text["mlp_only_layers"] = p.mlp_only;
    text["moe_intermediate_size"] = p.moe_ff;
    text["norm_topk_prob"] = true;
    text["num_experts"] = p.experts;
    text["num_experts_per_tok"] = p.top_k;
  }
  return {{"architectures",
           {moe ? "Qwen3VLMoeForConditionalGeneration" : "Qwen3VLForConditionalGeneration"}},
          {"image_token_id", 151655},
          {"model_type", moe ? "qwen3_vl_moe" : "qwen3_vl"},
          {"text_config", text},
          {"tie_word_embeddings", p.tied},
          {"video_token_id", 151656},
          {"vision_config", vision},
          {"vision_end_token_id", 151653},
          {"vision_start_token_id", 151652}};
}

// Deterministic per-element noise: a hash of (tensor seed, index), so chunks can be generated
// in parallel and in any order with the same result.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t tensor_hash(const std::string& name, uint64_t seed) {
  uint64_t h = seed;
  for (char c : name) h = mix(h ^ static_cast<uint8_t>(c));
  return h;
}

// Element `index` of the tensor whose hash is h: the sum of two uniforms, a cheap bell-shaped
// value in [mean - spread, mean + spread).
uint16_t random_element(uint64_t h, uint64_t index, float mean, float spread) {
  const uint64_t r = mix(h + index);
  const float u = static_cast<float>(r >> 40) / 16777216.0f;
  const float v = static_cast<float>((r >> 16) & 0xffffff) / 16777216.0f;
  return f32_to_bf16(mean + spread * (u + v - 1.0f));
}

// A tensor whose element i is element source_index(i) of the random tensor of hash h.
TensorSpec random_view(const std::string& name, std::vector<int64_t> shape, uint64_t h, float mean,
                       float spread, std::function<uint64_t(uint64_t)> source_index) {
  TensorSpec t{name, DType::kBF16, std::move(shape), {}};
  t.fill = [h, mean, spread, source_index](int64_t offset, int64_t count, uint8_t* out) {
    auto* dst = reinterpret_cast<uint16_t*>(out);
    ThreadPool::global().parallel_for(
        static_cast<size_t>(count),
        [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) {
            const uint64_t at = static_cast<uint64_t>(offset) + i;
            dst[i] = random_element(h, source_index ? source_index(at) : at, mean, spread);
          }
        },
        4096);
  };
  return t;
}

TensorSpec random_tensor(const std::string& name, std::vector<int64_t> shape, float mean,
                         float spread, uint64_t seed) {
  return random_view(name, std::move(shape), tensor_hash(name, seed), mean, spread, nullptr);
}

std::vector<TensorSpec> tensors_for(const Preset& p, uint64_t seed, ExpertLayout layout) {
  std::vector<TensorSpec> ts;
  auto w = [&](const std::string& n, std::vector<int64_t> s) {
    ts.push_back(random_tensor(n, std::move(s), 0.0f, 0.035f, seed));
  };
  auto ones = [&](const std::string& n, int64_t len) {
    ts.push_back(random_tensor(n, {len}, 1.0f, 0.1f, seed));
  };
  const std::string t = "model.language_model.";
  w(t + "embed_tokens.weight", {kVocab, p.hidden});
  for (int64_t l = 0; l < p.layers; ++l) {
    const std::string b = t + "layers." + std::to_string(l) + ".";
    ones(b + "input_layernorm.weight", p.hidden);
    ones(b + "post_attention_layernorm.weight", p.hidden);
    const bool sparse =
        p.experts > 0 && std::find(p.mlp_only.begin(), p.mlp_only.end(), l) == p.mlp_only.end();
    if (!sparse) {
      w(b + "mlp.down_proj.weight", {p.hidden, p.ff});
      w(b + "mlp.gate_proj.weight", {p.ff, p.hidden});
      w(b + "mlp.up_proj.weight", {p.ff, p.hidden});
    } else if (layout == ExpertLayout::kFused) {  // as transformers saves them
      w(b + "mlp.experts.down_proj", {p.experts, p.moe_ff, p.hidden});
      w(b + "mlp.experts.gate_up_proj", {p.experts, p.hidden, 2 * p.moe_ff});
    } else {
      // The fused tensors' values, split and transposed as loading splits them
      // (model/fused_experts.h): both layouts are the same model.
      const uint64_t gate_up = tensor_hash(b + "mlp.experts.gate_up_proj", seed);
      const uint64_t down = tensor_hash(b + "mlp.experts.down_proj", seed);
      const auto h = static_cast<uint64_t>(p.hidden), f = static_cast<uint64_t>(p.moe_ff);
      for (int64_t e = 0; e < p.experts; ++e) {
        const std::string x = b + "mlp.experts." + std::to_string(e) + ".";
        const auto ue = static_cast<uint64_t>(e);
        // down [hidden, ff] element (r, c) is fused down [e, c, r]; gate and up [ff, hidden]
        // element (r, c) are fused gate_up [e, c, r] and [e, c, ff + r].
        ts.push_back(random_view(x + "down_proj.weight", {p.hidden, p.moe_ff}, down, 0.0f, 0.035f,
                                 [=](uint64_t i) { return (ue * f + i % f) * h + i / f; }));
        ts.push_back(random_view(x + "gate_proj.weight", {p.moe_ff, p.hidden}, gate_up, 0.0f,
                                 0.035f,
                                 [=](uint64_t i) { return (ue * h + i % h) * 2 * f + i / h; }));
        ts.push_back(random_view(x + "up_proj.weight", {p.moe_ff, p.hidden}, gate_up, 0.0f, 0.035f,
                                 [=](uint64_t i) { return (ue * h + i % h) * 2 * f + f + i / h; }));
      }
    }
    // A router with a wider spread than the other weights, so that tokens prefer experts
    // clearly (as a trained one does) rather than by a hair.
    if (sparse)
      ts.push_back(random_tensor(b + "mlp.gate.weight", {p.experts, p.hidden}, 0.0f, 0.2f, seed));
    ones(b + "self_attn.k_norm.weight", p.head_dim);
    ones(b + "self_attn.q_norm.weight", p.head_dim);
    w(b + "self_attn.k_proj.weight", {p.kv_heads * p.head_dim, p.hidden});
    w(b + "self_attn.v_proj.weight", {p.kv_heads * p.head_dim, p.hidden});
    w(b + "self_attn.q_proj.weight", {p.heads * p.head_dim, p.hidden});
    w(b + "self_attn.o_proj.weight", {p.hidden, p.heads * p.head_dim});
  }
  ones(t + "norm.weight", p.hidden);
  if (!p.tied) w("lm_head.weight", {kVocab, p.hidden});
  const std::string v = "model.visual.";
  const int64_t merged = 4 * p.v_hidden;
  auto linear = [&](const std::string& n, int64_t out, int64_t in) {
    w(n + ".weight", {out, in});
    ts.push_back(random_tensor(n + ".bias", {out}, 0.0f, 0.02f, seed));
  };
  auto norm = [&](const std::string& n, int64_t len) {
    ones(n + ".weight", len);
    ts.push_back(random_tensor(n + ".bias", {len}, 0.0f, 0.05f, seed));
  };
  w(v + "patch_embed.proj.weight", {p.v_hidden, 3, 2, 16, 16});
  ts.push_back(random_tensor(v + "patch_embed.proj.bias", {p.v_hidden}, 0.0f, 0.02f, seed));
  w(v + "pos_embed.weight", {2304, p.v_hidden});
  for (int64_t b = 0; b < p.v_depth; ++b) {
    const std::string n = v + "blocks." + std::to_string(b) + ".";
    norm(n + "norm1", p.v_hidden);
    norm(n + "norm2", p.v_hidden);
    linear(n + "attn.qkv", 3 * p.v_hidden, p.v_hidden);
    linear(n + "attn.proj", p.v_hidden, p.v_hidden);
    linear(n + "mlp.linear_fc1", p.v_ff, p.v_hidden);
    linear(n + "mlp.linear_fc2", p.v_hidden, p.v_ff);
  }
  norm(v + "merger.norm", p.v_hidden);
  linear(v + "merger.linear_fc1", merged, merged);
  linear(v + "merger.linear_fc2", p.hidden, merged);
  for (size_t k = 0; k < p.deepstack.size(); ++k) {
    const std::string n = v + "deepstack_merger_list." + std::to_string(k) + ".";
    norm(n + "norm", merged);
    linear(n + "linear_fc1", merged, merged);
    linear(n + "linear_fc2", p.hidden, merged);
  }
  return ts;
}

}  // namespace

const std::vector<std::string>& model_preset_names() {
  static const std::vector<std::string> names = {"tiny",         "tiny-odd",        "tiny-moe",
                                                 "qwen3-vl-2b",  "qwen3-vl-4b",     "qwen3-vl-8b",
                                                 "qwen3-vl-32b", "qwen3-vl-30b-a3b"};
  return names;
}

ordered_json preset_config_json(const std::string& preset) {
  return config_json(preset_by_name(preset));
}

std::vector<TensorSpec> preset_tensors(const std::string& preset, uint64_t seed,
                                       ExpertLayout layout) {
  return tensors_for(preset_by_name(preset), seed, layout);
}

}  // namespace qvl
