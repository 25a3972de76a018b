#include "model/config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "model/config_json.h"

namespace qvl {
namespace {

const std::string kTiny = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";

nlohmann::json tiny_config() {
  return nlohmann::json::parse(read_text_file(kTiny + "/config.json"));
}

std::string error_of(const nlohmann::json& j) {
  try {
    parse_model_config(j.dump(), "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Config, ParsesTinyModel) {
  const ModelConfig c = load_model_config(kTiny);
  EXPECT_EQ(c.text.hidden_size, 64);
  EXPECT_EQ(c.text.num_layers, 4);
  EXPECT_EQ(c.text.num_kv_heads, 2);
  EXPECT_EQ(c.text.head_dim, 16);
  EXPECT_EQ(c.text.mrope_section, (std::array<int64_t, 3>{4, 2, 2}));
  EXPECT_TRUE(c.text.mrope_interleaved);
  EXPECT_DOUBLE_EQ(c.text.rope_theta, 5e6);
  EXPECT_EQ(c.vision.deepstack_visual_indexes, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(c.vision.num_position_embeddings, 2304);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.image_token_id, 151655);
  const GenerationConfig g = load_generation_config(kTiny);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_FALSE(g.do_sample);
}

TEST(Config, TieFlagFromTopLevelOrTextConfig) {
  auto j = tiny_config();
  j["tie_word_embeddings"] = false;
  EXPECT_FALSE(parse_model_config(j.dump(), "c").tie_word_embeddings);
  j.erase("tie_word_embeddings");
  EXPECT_TRUE(parse_model_config(j.dump(), "c").tie_word_embeddings);  // text_config says true
}

TEST(Config, ClearErrors) {
  auto j = tiny_config();
  j["architectures"] = {"LlamaForCausalLM"};
  EXPECT_NE(error_of(j).find("unsupported architecture"), std::string::npos);
  j = tiny_config();
  j["text_config"].erase("hidden_size");
  EXPECT_NE(error_of(j).find("text_config.hidden_size"), std::string::npos);
  j = tiny_config();
  j["text_config"]["rope_scaling"]["mrope_section"] = {4, 2};
  EXPECT_NE(error_of(j).find("mrope_section"), std::string::npos);
  j = tiny_config();
  j["text_config"]["num_key_value_heads"] = 3;
  EXPECT_NE(error_of(j).find("num_key_value_heads"), std::string::npos);
  j = tiny_config();
  j["vision_config"]["deepstack_visual_indexes"] = {0, 9};
  EXPECT_NE(error_of(j).find("deepstack_visual_indexes"), std::string::npos);
  j = tiny_config();
  j["vision_config"]["num_position_embeddings"] = 2300;
  EXPECT_NE(error_of(j).find("perfect square"), std::string::npos);
  j = tiny_config();
  j["text_config"]["hidden_size"] = "64";
  EXPECT_NE(error_of(j).find("integer"), std::string::npos);
  EXPECT_NE(error_of(nlohmann::json::array()).find("object"), std::string::npos);
  EXPECT_THROW(parse_model_config("{", "c"), Error);
}

// Values no real model has are refused with the field named, before anything is allocated.
TEST(Config, AbsurdValuesAreRefused) {
  struct Case {
    const char* section;  // "" for top level
    const char* key;
    nlohmann::json value;
  };
  const std::vector<Case> cases = {
      {"text_config", "rms_norm_eps", -1e-6},
      {"text_config", "rms_norm_eps", 0.0},
      {"text_config", "rms_norm_eps", 5.0},
      {"text_config", "rope_theta", -1.0},
      {"text_config", "max_position_embeddings", int64_t{1000000000000}},
      {"text_config", "num_hidden_layers", int64_t{1} << 40},
      {"text_config", "vocab_size", int64_t{1} << 40},
      {"text_config", "num_attention_heads", 1000000},
      {"vision_config", "depth", 100000},
      {"vision_config", "spatial_merge_size", 1000},
      {"", "image_token_id", int64_t{1000000000000}},
      {"", "image_token_id", -5},
      {"", "vision_start_token_id", 151936},
      {"", "video_token_id", -2},
  };
  for (const Case& c : cases) {
    auto j = tiny_config();
    auto& section = std::string(c.section).empty() ? j : j[c.section];
    section[c.key] = c.value;
    const std::string error = error_of(j);
    EXPECT_NE(error.find(c.key), std::string::npos)
        << c.section << "." << c.key << "=" << c.value.dump() << " gave: '" << error << "'";
  }
  auto j = tiny_config();
  j["video_token_id"] = -1;  // "no video token" stays allowed
  EXPECT_EQ(error_of(j), "");
}

// A mixture of experts (tiny-moe's config, as transformers 4.57.6 writes it): the expert fields,
// which layers are sparse, clear errors for bad ones, and the JSON qvl writes reads back the same.
TEST(Config, MixtureOfExperts) {
  const nlohmann::json moe =
      nlohmann::json::parse(read_text_file(std::string(QVL_GOLDEN_TINY_MOE_DIR) + "/config.json"));
  const ModelConfig c = parse_model_config(moe.dump(), "c");
  EXPECT_EQ(c.text.num_experts, 8);
  EXPECT_EQ(c.text.num_experts_per_tok, 2);
  EXPECT_EQ(c.text.moe_intermediate_size, 96);
  EXPECT_EQ(c.text.mlp_only_layers, (std::vector<int64_t>{2}));
  EXPECT_TRUE(c.text.sparse_layer(0));
  EXPECT_FALSE(c.text.sparse_layer(2));
  TextConfig every_other = c.text;
  every_other.mlp_only_layers.clear();
  every_other.decoder_sparse_step = 2;  // layers 1 and 3 (transformers: (i + 1) % step == 0)
  EXPECT_FALSE(every_other.sparse_layer(0));
  EXPECT_TRUE(every_other.sparse_layer(1));
  EXPECT_FALSE(load_model_config(kTiny).text.sparse_layer(0));  // dense models have none

  const ModelConfig back = parse_model_config(model_config_json(c).dump(), "written");
  EXPECT_EQ(model_config_json(back), model_config_json(c));
  EXPECT_EQ(back.text.num_experts, 8);
  EXPECT_EQ(back.text.mlp_only_layers, c.text.mlp_only_layers);

  const std::vector<std::pair<std::string, nlohmann::json>> bad = {
      {"num_experts_per_tok", 9}, {"num_experts", 0},         {"moe_intermediate_size", -1},
      {"mlp_only_layers", {7}},   {"decoder_sparse_step", 0}, {"norm_topk_prob", false}};
  for (const auto& [key, value] : bad) {
    auto j = moe;
    j["text_config"][key] = value;
    EXPECT_NE(error_of(j).find(key), std::string::npos) << key << ": " << error_of(j);
  }
  auto j = moe;
  j["text_config"].erase("num_experts");
  EXPECT_NE(error_of(j).find("text_config.num_experts"), std::string::npos);
}

TEST(Config, GenerationConfigVariants) {
  EXPECT_EQ(parse_generation_config(R"({"eos_token_id": 7})", "g").eos_token_ids,
            (std::vector<int64_t>{7}));
  const GenerationConfig g = parse_generation_config(
      R"({"do_sample": true, "temperature": 0.7, "top_p": 0.8, "top_k": 20})", "g");
  EXPECT_TRUE(g.do_sample);
  EXPECT_FLOAT_EQ(g.temperature, 0.7f);
  EXPECT_EQ(g.top_k, 20);
  EXPECT_THROW(parse_generation_config(R"({"top_k": "x"})", "g"), Error);
}

}  // namespace
}  // namespace qvl
