#include "cli/gen_model_command.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/half.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "model/safetensors_writer.h"

namespace qvl::cli {
namespace {

using ordered_json = nlohmann::ordered_json;

struct Preset {
  int64_t hidden, layers, heads, kv_heads, head_dim, ff;
  std::vector<int64_t> mrope;
  int64_t v_depth, v_hidden, v_heads, v_ff;
  std::vector<int64_t> deepstack;
};

Preset preset_by_name(const std::string& name) {
  if (name == "tiny") return {64, 4, 4, 2, 16, 128, {4, 2, 2}, 4, 32, 2, 64, {0, 1, 2}};
  // Widths that are not multiples of 32 (text 80 and 112, vision 48 and 72; head_dim 32 so the
  // 8-bit KV cache can run on it too): the fast weight
  // types cannot pack those matrices, which must then stay exact.
  if (name == "tiny-odd") return {80, 3, 4, 2, 32, 112, {8, 4, 4}, 3, 48, 2, 72, {0, 1}};
  if (name == "qwen3-vl-2b") {
    return {2048, 28, 16, 8, 128, 6144, {24, 20, 20}, 24, 1024, 16, 4096, {5, 11, 17}};
  }
  if (name == "qwen3-vl-4b") {
    return {2560, 36, 32, 8, 128, 9728, {24, 20, 20}, 24, 1024, 16, 4096, {5, 11, 17}};
  }
  fail(ErrorCode::kInvalidArgument,
       "unknown preset '" + name + "' (use tiny, tiny-odd, qwen3-vl-2b or qwen3-vl-4b)");
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
      {"tie_word_embeddings", true},
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
  return {{"architectures", {"Qwen3VLForConditionalGeneration"}},
          {"image_token_id", 151655},
          {"model_type", "qwen3_vl"},
          {"text_config", text},
          {"tie_word_embeddings", true},
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

TensorSpec random_tensor(const std::string& name, std::vector<int64_t> shape, float mean,
                         float spread, uint64_t seed) {
  uint64_t h = seed;
  for (char c : name) h = mix(h ^ static_cast<uint8_t>(c));
  TensorSpec t{name, DType::kBF16, std::move(shape), {}};
  t.fill = [h, mean, spread](int64_t offset, int64_t count, uint8_t* out) {
    auto* dst = reinterpret_cast<uint16_t*>(out);
    ThreadPool::global().parallel_for(
        static_cast<size_t>(count),
        [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) {
            // Sum of two uniforms: a cheap bell-shaped value in [-1, 1).
            const uint64_t r = mix(h + static_cast<uint64_t>(offset) + i);
            const float u = static_cast<float>(r >> 40) / 16777216.0f;
            const float v = static_cast<float>((r >> 16) & 0xffffff) / 16777216.0f;
            dst[i] = f32_to_bf16(mean + spread * (u + v - 1.0f));
          }
        },
        4096);
  };
  return t;
}

std::vector<TensorSpec> tensors_for(const Preset& p, uint64_t seed) {
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
    w(b + "mlp.down_proj.weight", {p.hidden, p.ff});
    w(b + "mlp.gate_proj.weight", {p.ff, p.hidden});
    w(b + "mlp.up_proj.weight", {p.ff, p.hidden});
    ones(b + "self_attn.k_norm.weight", p.head_dim);
    ones(b + "self_attn.q_norm.weight", p.head_dim);
    w(b + "self_attn.k_proj.weight", {p.kv_heads * p.head_dim, p.hidden});
    w(b + "self_attn.v_proj.weight", {p.kv_heads * p.head_dim, p.hidden});
    w(b + "self_attn.q_proj.weight", {p.heads * p.head_dim, p.hidden});
    w(b + "self_attn.o_proj.weight", {p.hidden, p.heads * p.head_dim});
  }
  ones(t + "norm.weight", p.hidden);
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

void write_json(const std::string& path, const ordered_json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) fail(ErrorCode::kIo, "cannot write '" + path + "'");
}

void copy_file(const std::string& from, const std::string& to) {
  std::string data = read_text_file(from);
  // A folder copied without symlinks may hold a one-line file naming the real file instead.
  if (data.size() < 4096 && !data.empty() && data[0] != '{') {
    std::string target = data.substr(0, data.find_first_of("\r\n"));
    if (!target.empty() && target[0] != '/')
      target = from.substr(0, from.find_last_of('/') + 1) + target;
    data = read_text_file(target);
  }
  std::ofstream out(to, std::ios::binary);
  out << data;
  if (!out) fail(ErrorCode::kIo, "cannot write '" + to + "'");
}

}  // namespace

void generate_model(const std::string& preset_name, const std::string& tokenizer_dir,
                    const std::string& out_dir, uint64_t seed) {
  const Preset p = preset_by_name(preset_name);
  if (!file_exists(tokenizer_dir + "/tokenizer.json")) {
    fail(ErrorCode::kNotFound, "no tokenizer.json in '" + tokenizer_dir + "'");
  }
  ::mkdir(out_dir.c_str(), 0755);
  write_json(out_dir + "/config.json", config_json(p));
  write_json(out_dir + "/generation_config.json", {{"bos_token_id", 151643},
                                                   {"do_sample", false},
                                                   {"eos_token_id", {151645, 151643}},
                                                   {"pad_token_id", 151643}});
  write_json(out_dir + "/preprocessor_config.json",
             {{"size", {{"longest_edge", 16777216}, {"shortest_edge", 65536}}},
              {"patch_size", 16},
              {"temporal_patch_size", 2},
              {"merge_size", 2},
              {"image_mean", {0.5, 0.5, 0.5}},
              {"image_std", {0.5, 0.5, 0.5}},
              {"processor_class", "Qwen3VLProcessor"},
              {"image_processor_type", "Qwen2VLImageProcessorFast"}});
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "chat_template.json"}) {
    const std::string src = tokenizer_dir + "/" + f;
    if (file_exists(src)) copy_file(src, out_dir + "/" + f);
  }
  write_safetensors(out_dir + "/model.safetensors", tensors_for(p, seed));
}

void add_gen_model_command(CLI::App& app) {
  struct Options {
    std::string preset = "tiny", tokenizer, out;
    uint64_t seed = 1234;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("gen-model", "Write a model folder with random weights");
  cmd->add_option("--preset", o->preset, "tiny, tiny-odd, qwen3-vl-2b or qwen3-vl-4b")
      ->check(CLI::IsMember({"tiny", "tiny-odd", "qwen3-vl-2b", "qwen3-vl-4b"}));
  cmd->add_option("--tokenizer", o->tokenizer, "Folder with tokenizer.json (and chat template)")
      ->required();
  cmd->add_option("--out", o->out, "Output folder")->required();
  cmd->add_option("--seed", o->seed, "Random seed");
  cmd->callback([o] {
    generate_model(o->preset, o->tokenizer, o->out, o->seed);
    QVL_LOG(kInfo) << "wrote " << o->preset << " model to " << o->out;
  });
}

}  // namespace qvl::cli
