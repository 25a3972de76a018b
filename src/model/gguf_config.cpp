#include "model/gguf_config.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "base/error.h"

namespace qvl {
namespace {

constexpr const char* kArch = "qwen3vl";
constexpr const char* kProjector = "qwen3vl_merger";
constexpr int64_t kMaxDimension = 1 << 20;
constexpr int64_t kMaxCount = 4096;

int64_t positive(const GgufFile& f, const std::string& key, int64_t max = kMaxDimension) {
  const int64_t v = f.get_int(key);
  if (v <= 0 || v > max) {
    f.corrupt("key '" + key + "' is " + std::to_string(v) + ", expected 1.." + std::to_string(max));
  }
  return v;
}

double number_in(const GgufFile& f, const std::string& key, double lo, double hi) {
  const double v = f.get_float(key);
  if (!(v > lo && v <= hi)) f.corrupt("key '" + key + "' is out of range");
  return v;
}

// Id of a special token by its text in the GGUF vocabulary.
int64_t token_id(const GgufFile& f, const std::vector<std::string>& tokens, const std::string& t) {
  const auto it = std::find(tokens.begin(), tokens.end(), t);
  if (it == tokens.end()) f.corrupt("the vocabulary has no " + t + " token");
  return it - tokens.begin();
}

const GgufTensor& tensor_with_dims(const GgufFile& f, const std::string& name, size_t n_dims) {
  const GgufTensor& t = f.tensor(name);
  if (t.dims.size() != n_dims) {
    f.corrupt("tensor '" + name + "' has " + std::to_string(t.dims.size()) +
              " dimensions, expected " + std::to_string(n_dims));
  }
  return t;
}

TextConfig text_config(const GgufFile& f) {
  const std::string a = std::string(kArch) + ".";
  TextConfig t;
  t.vocab_size = tensor_with_dims(f, "token_embd.weight", 2).dims[1];
  t.hidden_size = positive(f, a + "embedding_length");
  t.num_layers = positive(f, a + "block_count", kMaxCount);
  t.num_heads = positive(f, a + "attention.head_count", kMaxCount);
  t.num_kv_heads = f.find(a + "attention.head_count_kv")
                       ? positive(f, a + "attention.head_count_kv", kMaxCount)
                       : t.num_heads;
  t.head_dim = f.find(a + "attention.key_length")
                   ? positive(f, a + "attention.key_length", kMaxCount)
                   : t.hidden_size / t.num_heads;
  if (f.find(a + "attention.value_length") &&
      f.get_int(a + "attention.value_length") != t.head_dim) {
    f.corrupt("value_length differs from key_length (Qwen3 has one head size)");
  }
  t.intermediate_size = positive(f, a + "feed_forward_length");
  t.max_position_embeddings = positive(f, a + "context_length", 1 << 24);
  t.rms_norm_eps = static_cast<float>(number_in(f, a + "attention.layer_norm_rms_epsilon", 0, 1));
  t.rope_theta = number_in(f, a + "rope.freq_base", 0, 1e12);
  const std::vector<int64_t>& sections = f.get_ints(a + "rope.dimension_sections");
  if (sections.size() < 3 || sections.size() > 4 || (sections.size() == 4 && sections[3] != 0)) {
    f.corrupt("rope.dimension_sections must be 3 sections (t, h, w) and an optional 0");
  }
  int64_t total = 0;
  for (int i = 0; i < 3; ++i) {
    if (sections[i] < 0) f.corrupt("rope.dimension_sections has a negative section");
    t.mrope_section[i] = sections[i];
    total += sections[i];
  }
  if (t.num_heads % t.num_kv_heads != 0 || t.head_dim % 2 != 0 || total != t.head_dim / 2) {
    f.corrupt("head counts, key_length and rope.dimension_sections do not fit together");
  }
  t.mrope_interleaved = true;  // the qwen3vl architecture's rope ("imrope" in llama.cpp)
  t.hidden_act = "silu";
  return t;
}

VisionConfig vision_config(const GgufFile& f) {
  const std::string projector = f.find("clip.vision.projector_type")
                                    ? f.get_string("clip.vision.projector_type")
                                    : f.get_string("clip.projector_type");
  if (projector != kProjector) {
    fail(ErrorCode::kUnsupported, "the vision projector '" + f.path() + "' is of type '" +
                                      projector + "'; qvl runs Qwen3-VL's (" + kProjector + ")");
  }
  if (f.find("clip.has_vision_encoder") && !f.get_bool("clip.has_vision_encoder")) {
    fail(ErrorCode::kUnsupported, "'" + f.path() + "' has no vision encoder");
  }
  VisionConfig v;
  v.depth = positive(f, "clip.vision.block_count", kMaxCount);
  v.hidden_size = positive(f, "clip.vision.embedding_length");
  v.num_heads = positive(f, "clip.vision.attention.head_count", kMaxCount);
  v.intermediate_size = positive(f, "clip.vision.feed_forward_length");
  v.patch_size = positive(f, "clip.vision.patch_size", kMaxCount);
  v.spatial_merge_size = positive(f, "clip.vision.spatial_merge_size", 16);
  v.out_hidden_size = positive(f, "clip.vision.projection_dim");
  v.layer_norm_eps =
      static_cast<float>(number_in(f, "clip.vision.attention.layer_norm_epsilon", 0, 1));
  // The converter splits the Conv3d kernel into one [C, P, P] slice per frame.
  const GgufTensor& patch = tensor_with_dims(f, "v.patch_embd.weight", 4);
  v.temporal_patch_size = f.find_tensor("v.patch_embd.weight.1") ? 2 : 1;
  v.in_channels = patch.dims[2];
  v.num_position_embeddings = tensor_with_dims(f, "v.position_embd.weight", 2).dims[1];
  if (f.find("clip.vision.is_deepstack_layers")) {
    const std::vector<int64_t>& flags = f.get_ints("clip.vision.is_deepstack_layers");
    for (size_t i = 0; i < flags.size(); ++i) {
      if (flags[i]) v.deepstack_visual_indexes.push_back(static_cast<int64_t>(i));
    }
  }
  v.hidden_act = "gelu_pytorch_tanh";
  if (v.hidden_size % v.num_heads != 0)
    f.corrupt("the vision head count does not divide its width");
  for (int64_t idx : v.deepstack_visual_indexes) {
    if (idx >= v.depth) f.corrupt("a DeepStack layer lies beyond the vision blocks");
  }
  int64_t side = 1;
  while (side * side < v.num_position_embeddings) ++side;
  if (side * side != v.num_position_embeddings) {
    f.corrupt("v.position_embd.weight does not hold a square grid of positions");
  }
  return v;
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& text, const GgufFile& vision) {
  const std::string arch = text.get_string("general.architecture");
  if (arch != kArch) {
    fail(ErrorCode::kUnsupported, "'" + text.path() + "' holds a '" + arch +
                                      "' model; qvl runs Qwen3-VL (GGUF architecture qwen3vl)");
  }
  ModelConfig c;
  c.text = text_config(text);
  c.vision = vision_config(vision);
  if (c.vision.out_hidden_size != c.text.hidden_size) {
    fail(ErrorCode::kInvalidArgument,
         "the vision projector '" + vision.path() + "' projects to " +
             std::to_string(c.vision.out_hidden_size) + " but the language model '" + text.path() +
             "' is " + std::to_string(c.text.hidden_size) + " wide: they are not a pair");
  }
  const std::string a = std::string(kArch) + ".";
  if (const auto n = text.int_or_none(a + "n_deepstack_layers");
      n && *n != static_cast<int64_t>(c.vision.deepstack_visual_indexes.size())) {
    fail(ErrorCode::kInvalidArgument, "'" + text.path() + "' expects " + std::to_string(*n) +
                                          " DeepStack layers but the vision projector '" +
                                          vision.path() + "' has " +
                                          std::to_string(c.vision.deepstack_visual_indexes.size()));
  }
  c.tie_word_embeddings = text.find_tensor("output.weight") == nullptr;
  const std::vector<std::string>& tokens = text.get_strings("tokenizer.ggml.tokens");
  c.image_token_id = token_id(text, tokens, "<|image_pad|>");
  c.video_token_id = token_id(text, tokens, "<|video_pad|>");
  c.vision_start_token_id = token_id(text, tokens, "<|vision_start|>");
  c.vision_end_token_id = token_id(text, tokens, "<|vision_end|>");
  return c;
}

GenerationConfig gguf_generation_config(const GgufFile& text) {
  GenerationConfig g;
  const std::vector<std::string>& tokens = text.get_strings("tokenizer.ggml.tokens");
  const auto add_eos = [&](int64_t id) {
    if (id >= 0 &&
        std::find(g.eos_token_ids.begin(), g.eos_token_ids.end(), id) == g.eos_token_ids.end()) {
      g.eos_token_ids.push_back(id);
    }
  };
  if (const auto eos = text.int_or_none("tokenizer.ggml.eos_token_id")) add_eos(*eos);
  for (const char* t : {"<|im_end|>", "<|endoftext|>"}) {
    const auto it = std::find(tokens.begin(), tokens.end(), t);
    if (it != tokens.end()) add_eos(it - tokens.begin());
  }
  if (const auto pad = text.int_or_none("tokenizer.ggml.padding_token_id")) g.pad_token_id = *pad;
  if (text.find("general.sampling.temp")) {
    g.temperature = static_cast<float>(text.get_float("general.sampling.temp"));
    g.do_sample = g.temperature > 0;
  }
  if (text.find("general.sampling.top_p")) {
    g.top_p = static_cast<float>(text.get_float("general.sampling.top_p"));
  }
  if (text.find("general.sampling.top_k")) g.top_k = text.get_int("general.sampling.top_k");
  if (text.find("general.sampling.penalty_repeat")) {
    g.repetition_penalty = static_cast<float>(text.get_float("general.sampling.penalty_repeat"));
  }
  return g;
}

GgufImageNormalization gguf_image_normalization(const GgufFile& vision) {
  GgufImageNormalization n;
  for (const auto& [key, out] :
       {std::pair{"clip.vision.image_mean", &n.mean}, std::pair{"clip.vision.image_std", &n.std}}) {
    const GgufValue* v = vision.find(key);
    if (!v) continue;
    if (!v->is_array || !v->is_float() || v->floats.size() != 3) {
      vision.corrupt(std::string("key '") + key + "' is not 3 floats");
    }
    for (int i = 0; i < 3; ++i) {
      const double x = v->floats[static_cast<size_t>(i)];
      if (!std::isfinite(x) || (out == &n.std && x <= 0)) {
        vision.corrupt(std::string("key '") + key + "' has an impossible value");
      }
      (*out)[static_cast<size_t>(i)] = static_cast<float>(x);
    }
  }
  return n;
}

namespace {

// llama.cpp's llama_ftype ids (llama.h) of the types people publish; retired ids are absent.
const char* llama_file_type_name(int64_t id) {
  switch (id) {
    case 0:
      return "F32";
    case 1:
      return "F16";
    case 2:
      return "Q4_0";
    case 3:
      return "Q4_1";
    case 7:
      return "Q8_0";
    case 8:
      return "Q5_0";
    case 9:
      return "Q5_1";
    case 10:
      return "Q2_K";
    case 11:
      return "Q3_K_S";
    case 12:
      return "Q3_K_M";
    case 13:
      return "Q3_K_L";
    case 14:
      return "Q4_K_S";
    case 15:
      return "Q4_K_M";
    case 16:
      return "Q5_K_S";
    case 17:
      return "Q5_K_M";
    case 18:
      return "Q6_K";
    case 19:
      return "IQ2_XXS";
    case 20:
      return "IQ2_XS";
    case 21:
      return "Q2_K_S";
    case 22:
      return "IQ3_XS";
    case 23:
      return "IQ3_XXS";
    case 24:
      return "IQ1_S";
    case 25:
      return "IQ4_NL";
    case 26:
      return "IQ3_S";
    case 27:
      return "IQ3_M";
    case 28:
      return "IQ2_S";
    case 29:
      return "IQ2_M";
    case 30:
      return "IQ4_XS";
    case 31:
      return "IQ1_M";
    case 32:
      return "BF16";
    default:
      return nullptr;
  }
}

}  // namespace

std::string gguf_file_type(const GgufFile& file) {
  const GgufValue* value = file.find("general.file_type");
  if (value && value->is_integer() && !value->is_array) {
    if (const char* name = llama_file_type_name(file.get_int("general.file_type"))) return name;
  }
  std::map<GgmlType, uint64_t> bytes;
  for (const GgufTensor& t : file.tensors()) {
    if (t.dims.size() >= 2) bytes[t.type] += t.nbytes;
  }
  const auto most = std::max_element(
      bytes.begin(), bytes.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return most == bytes.end() ? "F32" : ggml_type_name(most->first);
}

}  // namespace qvl
