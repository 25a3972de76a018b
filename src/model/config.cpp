#include "model/config.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/mapped_file.h"

namespace qvl {
namespace {

using json = nlohmann::json;

json parse_json(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(ErrorCode::kCorrupt, origin + " is not valid JSON: " + e.what());
  }
}

constexpr int64_t kMaxDimension = 1 << 20;   // hidden, intermediate and similar sizes
constexpr int64_t kMaxCount = 4096;          // layers, heads, patch sizes
constexpr int64_t kMaxVocabulary = 1 << 22;  // 4M tokens (Qwen3: 151,936)
constexpr int64_t kMaxPositions = 1 << 24;   // 16M (Qwen3-VL: 262,144)

// Field access with errors that name the file and the JSON path.
class Reader {
 public:
  Reader(const json& j, std::string origin, std::string path)
      : j_(j), origin_(std::move(origin)), path_(std::move(path)) {}

  const json& at(const std::string& key) const {
    if (!j_.contains(key) || j_[key].is_null()) {
      fail(ErrorCode::kInvalidArgument, origin_ + ": missing field '" + path_ + key + "'");
    }
    return j_[key];
  }
  bool has(const std::string& key) const { return j_.contains(key) && !j_[key].is_null(); }
  Reader child(const std::string& key) const {
    const json& c = at(key);
    if (!c.is_object()) bad(key, "an object");
    return Reader(c, origin_, path_ + key + ".");
  }
  int64_t integer(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number_integer()) bad(key, "an integer");
    return v.get<int64_t>();
  }
  // Every size has a ceiling far above any real model, so an absurd value (1e12 positions, a
  // billion heads) is refused here instead of turning into a huge allocation later.
  int64_t positive(const std::string& key, int64_t max = kMaxDimension) const {
    const int64_t v = integer(key);
    if (v <= 0 || v > max) bad(key, "a positive integer up to " + std::to_string(max));
    return v;
  }
  int64_t in_range(const std::string& key, int64_t lo, int64_t hi, const std::string& what) const {
    const int64_t v = integer(key);
    if (v < lo || v > hi) bad(key, what);
    return v;
  }
  double number(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) bad(key, "a finite number");
    return v.get<double>();
  }
  double number_in(const std::string& key, double lo, double hi) const {
    const double v = number(key);
    if (!(v > lo && v <= hi)) {
      std::ostringstream range;
      range << "a number in (" << lo << ", " << hi << "]";
      bad(key, range.str());
    }
    return v;
  }
  std::string string(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) bad(key, "a string");
    return v.get<std::string>();
  }
  bool boolean(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean()) bad(key, "true or false");
    return j_[key].get<bool>();
  }
  std::vector<int64_t> int_list(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_array()) bad(key, "a list of integers");
    std::vector<int64_t> out;
    for (const auto& e : v) {
      if (!e.is_number_integer()) bad(key, "a list of integers");
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  [[noreturn]] void bad(const std::string& key, const std::string& what) const {
    fail(ErrorCode::kInvalidArgument, origin_ + ": field '" + path_ + key + "' must be " + what);
  }

 private:
  const json& j_;
  std::string origin_;
  std::string path_;
};

TextConfig parse_text(const Reader& r) {
  TextConfig t;
  t.vocab_size = r.positive("vocab_size", kMaxVocabulary);
  t.hidden_size = r.positive("hidden_size");
  t.num_layers = r.positive("num_hidden_layers", kMaxCount);
  t.num_heads = r.positive("num_attention_heads", kMaxCount);
  t.num_kv_heads =
      r.has("num_key_value_heads") ? r.positive("num_key_value_heads", kMaxCount) : t.num_heads;
  t.head_dim = r.has("head_dim") ? r.positive("head_dim", kMaxCount) : t.hidden_size / t.num_heads;
  if (t.head_dim <= 0) r.bad("num_attention_heads", "at most hidden_size");
  t.intermediate_size = r.positive("intermediate_size");
  t.max_position_embeddings = r.positive("max_position_embeddings", kMaxPositions);
  t.rms_norm_eps = static_cast<float>(r.number_in("rms_norm_eps", 0.0, 1.0));
  t.rope_theta = r.number_in("rope_theta", 0.0, 1e12);
  t.attention_bias = r.boolean("attention_bias", false);
  t.hidden_act = r.has("hidden_act") ? r.string("hidden_act") : "silu";
  if (t.hidden_act != "silu") r.bad("hidden_act", "\"silu\" (the only activation qvl supports)");
  if (t.attention_bias) r.bad("attention_bias", "false (qvl supports Qwen3 without biases)");
  if (t.num_heads % t.num_kv_heads != 0) {
    r.bad("num_key_value_heads", "a divisor of num_attention_heads");
  }
  if (t.head_dim % 2 != 0) r.bad("head_dim", "even");
  const Reader rope = r.child("rope_scaling");
  const std::vector<int64_t> section = rope.int_list("mrope_section");
  if (section.size() != 3) rope.bad("mrope_section", "a list of 3 integers");
  int64_t total = 0;
  for (int i = 0; i < 3; ++i) {
    if (section[i] < 0) rope.bad("mrope_section", "non-negative");
    t.mrope_section[i] = section[i];
    total += section[i];
  }
  if (total != t.head_dim / 2) rope.bad("mrope_section", "a split of head_dim/2 frequencies");
  t.mrope_interleaved = rope.boolean("mrope_interleaved", false);
  if (!t.mrope_interleaved) {
    rope.bad("mrope_interleaved", "true (Qwen3-VL's interleaved M-RoPE)");
  }
  if (rope.has("rope_type") && rope.string("rope_type") != "default") {
    rope.bad("rope_type", "\"default\"");
  }
  return t;
}

// The mixture-of-experts fields of a Qwen3VLMoe text config.
void parse_experts(const Reader& r, TextConfig& t) {
  t.num_experts = r.positive("num_experts", kMaxCount);
  t.num_experts_per_tok = r.positive("num_experts_per_tok", kMaxCount);
  if (t.num_experts_per_tok > t.num_experts) r.bad("num_experts_per_tok", "at most num_experts");
  t.moe_intermediate_size = r.positive("moe_intermediate_size");
  t.decoder_sparse_step =
      r.has("decoder_sparse_step") ? r.positive("decoder_sparse_step", kMaxCount) : 1;
  if (r.has("mlp_only_layers")) t.mlp_only_layers = r.int_list("mlp_only_layers");
  for (int64_t layer : t.mlp_only_layers) {
    if (layer < 0 || layer >= t.num_layers) r.bad("mlp_only_layers", "layer indexes below depth");
  }
  // transformers 4.57's Qwen3VLMoe always renormalises the top-k weights; a config asking
  // otherwise describes a model it (and qvl) would run differently from its training.
  if (!r.boolean("norm_topk_prob", true)) r.bad("norm_topk_prob", "true (normalised top-k)");
}

VisionConfig parse_vision(const Reader& r) {
  VisionConfig v;
  v.depth = r.positive("depth", kMaxCount);
  v.hidden_size = r.positive("hidden_size");
  v.num_heads = r.positive("num_heads", kMaxCount);
  v.intermediate_size = r.positive("intermediate_size");
  v.patch_size = r.positive("patch_size", kMaxCount);
  v.temporal_patch_size = r.positive("temporal_patch_size", 16);
  v.spatial_merge_size = r.positive("spatial_merge_size", 16);
  v.in_channels = r.has("in_channels") ? r.positive("in_channels", 16) : 3;
  v.out_hidden_size = r.positive("out_hidden_size");
  v.num_position_embeddings = r.positive("num_position_embeddings", kMaxPositions);
  v.deepstack_visual_indexes = r.has("deepstack_visual_indexes")
                                   ? r.int_list("deepstack_visual_indexes")
                                   : std::vector<int64_t>{};
  v.hidden_act = r.has("hidden_act") ? r.string("hidden_act") : "gelu_pytorch_tanh";
  if (v.hidden_act != "gelu_pytorch_tanh") r.bad("hidden_act", "\"gelu_pytorch_tanh\"");
  if (v.hidden_size % v.num_heads != 0) r.bad("num_heads", "a divisor of hidden_size");
  for (int64_t idx : v.deepstack_visual_indexes) {
    if (idx < 0 || idx >= v.depth) r.bad("deepstack_visual_indexes", "block indexes below depth");
  }
  int64_t side = 1;
  while (side * side < v.num_position_embeddings) ++side;
  if (side * side != v.num_position_embeddings) {
    r.bad("num_position_embeddings", "a perfect square");
  }
  return v;
}

}  // namespace

ModelConfig parse_model_config(const std::string& text, const std::string& origin) {
  const json j = parse_json(text, origin);
  if (!j.is_object()) fail(ErrorCode::kInvalidArgument, origin + " is not a JSON object");
  const Reader r(j, origin, "");
  bool dense = false, experts = false;
  if (r.has("architectures") && r.at("architectures").is_array()) {
    for (const auto& a : r.at("architectures")) {
      if (!a.is_string()) continue;
      dense = dense || a.get<std::string>() == "Qwen3VLForConditionalGeneration";
      experts = experts || a.get<std::string>() == "Qwen3VLMoeForConditionalGeneration";
    }
  }
  if (!dense && !experts) {
    const std::string got = r.has("architectures") ? r.at("architectures").dump() : "none";
    fail(ErrorCode::kUnsupported,
         origin + ": unsupported architecture " + got +
             "; qvl runs Qwen3VLForConditionalGeneration and Qwen3VLMoeForConditionalGeneration "
             "(Qwen3-VL)");
  }
  ModelConfig c;
  const Reader text_r = r.child("text_config");
  c.text = parse_text(text_r);
  if (experts) parse_experts(text_r, c.text);
  c.vision = parse_vision(r.child("vision_config"));
  if (c.vision.deepstack_visual_indexes.size() > static_cast<size_t>(c.text.num_layers)) {
    fail(ErrorCode::kInvalidArgument, origin + ": more DeepStack layers than text layers");
  }
  // The top-level flag is what transformers uses; older exports only set it in text_config.
  c.tie_word_embeddings = r.has("tie_word_embeddings")
                              ? r.boolean("tie_word_embeddings", false)
                              : text_r.boolean("tie_word_embeddings", false);
  // Special tokens index the embedding table: they must be ids of the vocabulary.
  const int64_t vocab = c.text.vocab_size;
  const std::string token_id = "a token id below vocab_size (" + std::to_string(vocab) + ")";
  c.image_token_id = r.in_range("image_token_id", 0, vocab - 1, token_id);
  c.video_token_id =
      r.has("video_token_id") ? r.in_range("video_token_id", -1, vocab - 1, token_id) : -1;
  c.vision_start_token_id = r.in_range("vision_start_token_id", 0, vocab - 1, token_id);
  c.vision_end_token_id = r.in_range("vision_end_token_id", 0, vocab - 1, token_id);
  return c;
}

bool TextConfig::sparse_layer(int64_t layer) const {
  if (num_experts == 0) return false;
  for (int64_t dense : mlp_only_layers) {
    if (dense == layer) return false;
  }
  return (layer + 1) % decoder_sparse_step == 0;
}

ModelConfig load_model_config(const std::string& dir) {
  const std::string path = dir + "/config.json";
  return parse_model_config(read_text_file(path), path);
}

GenerationConfig parse_generation_config(const std::string& text, const std::string& origin) {
  const json j = parse_json(text, origin);
  if (!j.is_object()) fail(ErrorCode::kInvalidArgument, origin + " is not a JSON object");
  const Reader r(j, origin, "");
  GenerationConfig g;
  if (r.has("eos_token_id")) {
    const json& e = r.at("eos_token_id");
    if (e.is_array()) {
      g.eos_token_ids = r.int_list("eos_token_id");
    } else {
      g.eos_token_ids = {r.integer("eos_token_id")};
    }
  }
  if (r.has("pad_token_id")) g.pad_token_id = r.integer("pad_token_id");
  g.do_sample = r.boolean("do_sample", false);
  if (r.has("temperature")) g.temperature = static_cast<float>(r.number("temperature"));
  if (r.has("top_p")) g.top_p = static_cast<float>(r.number("top_p"));
  if (r.has("top_k")) g.top_k = r.integer("top_k");
  if (r.has("repetition_penalty")) {
    g.repetition_penalty = static_cast<float>(r.number("repetition_penalty"));
  }
  return g;
}

GenerationConfig generation_config_from_texts(const std::optional<std::string>& generation_json,
                                              const std::string& generation_origin,
                                              const std::string& config_json,
                                              const std::string& config_origin) {
  GenerationConfig g;
  if (generation_json) g = parse_generation_config(*generation_json, generation_origin);
  if (g.eos_token_ids.empty()) {
    const json j = parse_json(config_json, config_origin);
    if (j.contains("text_config") && j["text_config"].contains("eos_token_id") &&
        j["text_config"]["eos_token_id"].is_number_integer()) {
      g.eos_token_ids.push_back(j["text_config"]["eos_token_id"].get<int64_t>());
    }
  }
  return g;
}

GenerationConfig load_generation_config(const std::string& dir) {
  const std::string path = dir + "/generation_config.json", cfg_path = dir + "/config.json";
  std::optional<std::string> text;
  if (file_exists(path)) text = read_text_file(path);
  return generation_config_from_texts(
      text, path, file_exists(cfg_path) ? read_text_file(cfg_path) : "{}", cfg_path);
}

}  // namespace qvl
