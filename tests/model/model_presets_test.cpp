// The gen-model presets against the published model family: their configs load as what the
// real config.json files say (docs/model-family.md), their parameter counts match the published
// sizes, and the bytes of a pre-packed file follow from the shapes — the arithmetic is checked
// against the real packer on small models, then applied to 8B and 32B, whose files cannot be
// written on a test machine.
#include "model/model_presets.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/packed_file_writer.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"
#include "model/weight_types.h"
#include "model/weights_util.h"
#include "ops/packed_matrix.h"

namespace qvl {
namespace {

struct Shape {
  std::string name;
  std::vector<int64_t> dims;
};

int64_t elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s.dims) n *= d;
  return n;
}

std::vector<Shape> preset_shapes(const std::string& preset) {
  std::vector<Shape> out;
  for (const TensorSpec& t : preset_tensors(preset, 1)) out.push_back({t.name, t.shape});
  return out;
}

int64_t parameters(const std::vector<Shape>& shapes, bool vision) {
  int64_t n = 0;
  for (const Shape& s : shapes) {
    if ((s.name.rfind("model.visual.", 0) == 0) == vision) n += elements(s);
  }
  return n;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Bytes of the weight tensors of a pre-packed file of bf16 tensors: the packer stores the
// decoder projections, the head (a packed copy of the embedding when tied) and the vision
// blocks' and mergers' linears in their type where whole 32-column blocks fit, every other
// tensor as it is.
size_t packed_weight_bytes(const std::vector<Shape>& shapes, const WeightTypes& types) {
  // A matrix too narrow for its type stays as stored (so a tied head gets no packed copy).
  auto packed = [](ops::QuantType wanted, const Shape& s, size_t as_stored) {
    const ops::QuantType type = stored_type(fitting_type(wanted, s.dims[1]));
    if (type == ops::QuantType::kExact) return as_stored;
    return ops::packed_size_bytes(type, s.dims[0], s.dims[1]);
  };
  size_t bytes = 0;
  bool untied = false;
  for (const Shape& s : shapes) {
    const size_t stored = static_cast<size_t>(elements(s)) * 2;  // bf16
    const bool text_matrix =
        s.name.rfind("model.language_model.layers.", 0) == 0 && ends_with(s.name, "_proj.weight");
    const bool vision_linear =
        s.name.rfind("model.visual.", 0) == 0 &&
        (ends_with(s.name, "attn.qkv.weight") || ends_with(s.name, "attn.proj.weight") ||
         ends_with(s.name, "linear_fc1.weight") || ends_with(s.name, "linear_fc2.weight"));
    if (text_matrix) {
      bytes += packed(types.text, s, stored);
    } else if (s.name == "lm_head.weight") {
      bytes += packed(types.lm_head, s, stored);
      untied = true;
    } else if (vision_linear) {
      bytes += packed(types.vision, s, stored);
    } else {
      bytes += stored;
    }
  }
  if (!untied) {
    for (const Shape& s : shapes) {
      if (s.name == "model.language_model.embed_tokens.weight")
        bytes += packed(types.lm_head, s, 0);
    }
  }
  return bytes;
}

size_t tensor_bytes_in_file(const std::string& path) {
  const SafeTensorsFile file(path);
  size_t bytes = 0;
  for (const auto& [name, t] : file.tensors()) {
    if (name.rfind("__pad", 0) != 0) bytes += t.nbytes;  // alignment padding is not a weight
  }
  return bytes;
}

std::vector<Shape> folder_shapes(const std::string& dir) {
  const SafeTensorsFile file(dir + "/model.safetensors");
  std::vector<Shape> out;
  for (const auto& [name, t] : file.tensors()) {
    out.push_back({name, t.shape});
  }
  return out;
}

TEST(ModelPresets, ConfigsLoadAsThePublishedOnes) {
  for (const std::string& name : model_preset_names()) {
    SCOPED_TRACE(name);
    const ModelConfig c = parse_model_config(preset_config_json(name).dump(), name);
    EXPECT_EQ(c.vision.out_hidden_size, c.text.hidden_size);
  }
  const ModelConfig b8 = parse_model_config(preset_config_json("qwen3-vl-8b").dump(), "8b");
  const ModelConfig b32 = parse_model_config(preset_config_json("qwen3-vl-32b").dump(), "32b");
  for (const ModelConfig* c : {&b8, &b32}) {
    EXPECT_FALSE(c->tie_word_embeddings);
    EXPECT_EQ(c->text.num_kv_heads, 8);
    EXPECT_EQ(c->text.head_dim, 128);
    EXPECT_EQ(c->vision.depth, 27);
    EXPECT_EQ(c->vision.hidden_size, 1152);
    EXPECT_EQ(c->vision.num_heads, 16);
    EXPECT_EQ(c->vision.intermediate_size, 4304);
    EXPECT_EQ(c->vision.deepstack_visual_indexes, (std::vector<int64_t>{8, 16, 24}));
  }
  EXPECT_EQ(b8.text.hidden_size, 4096);
  EXPECT_EQ(b8.text.num_layers, 36);
  EXPECT_EQ(b8.text.num_heads, 32);
  EXPECT_EQ(b8.text.intermediate_size, 12288);
  EXPECT_EQ(b32.text.hidden_size, 5120);
  EXPECT_EQ(b32.text.num_layers, 64);
  EXPECT_EQ(b32.text.num_heads, 64);
  EXPECT_EQ(b32.text.intermediate_size, 25600);
}

TEST(ModelPresets, ParameterCountsMatchThePublishedSizes) {
  // 2B: DESIGN.md (text 1.72 B with a 311 M embedding, vision 0.41 B).
  const auto b2 = preset_shapes("qwen3-vl-2b");
  EXPECT_NEAR(parameters(b2, false) / 1e9, 1.72, 0.005);
  EXPECT_NEAR(parameters(b2, true) / 1e9, 0.41, 0.005);
  // 8B: 8.77 B in all (Hugging Face's count of the checkpoint).
  const auto b8 = preset_shapes("qwen3-vl-8b");
  EXPECT_NEAR((parameters(b8, false) + parameters(b8, true)) / 1e9, 8.77, 0.005);
  // 32B: its decoder is Qwen3-32B's shape (32.8 B), the tower adds 0.6 B (33.4 B in all).
  const auto b32 = preset_shapes("qwen3-vl-32b");
  EXPECT_NEAR(parameters(b32, false) / 1e9, 32.76, 0.01);
  EXPECT_NEAR((parameters(b32, false) + parameters(b32, true)) / 1e9, 33.36, 0.01);
}

// Writes a preset's config.json and model.safetensors into a fresh folder.
std::string write_preset_folder(const std::string& preset) {
  const std::string dir = ::testing::TempDir() + "/qvl_preset_" + preset;
  EXPECT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  FILE* f = std::fopen((dir + "/config.json").c_str(), "w");
  const std::string config = preset_config_json(preset).dump(2);
  std::fwrite(config.data(), 1, config.size(), f);
  std::fclose(f);
  write_safetensors(dir + "/model.safetensors", preset_tensors(preset, 7));
  return dir;
}

TEST(ModelPresets, PackedSizeArithmeticMatchesThePacker) {
  // tiny: tied head; tiny-odd: widths the packed types cannot hold; tiny-b: untied head and a
  // vision FFN of 176 (like 8B's 4304, a multiple of 16 but not of 32).
  const std::vector<std::string> folders = {write_preset_folder("tiny"),
                                            write_preset_folder("tiny-odd"),
                                            std::string(QVL_GOLDEN_TINY_B_DIR)};
  for (const std::string& dir : folders) {
    for (const std::string quant : {"bf16", "q8", "q4"}) {
      SCOPED_TRACE(dir + " " + quant);
      const std::string out = ::testing::TempDir() + "/qvl_preset_packed.qvl";
      write_packed_model_file(dir, quant, out, {});
      EXPECT_EQ(tensor_bytes_in_file(out),
                packed_weight_bytes(folder_shapes(dir), weight_types_for(quant)));
      std::remove(out.c_str());
    }
  }
}

TEST(ModelPresets, FileSizesOfTheLargeModels) {
  struct Expect {
    const char* preset;
    double bf16_gb, q8_gb, q4_gb;
  };
  // bf16 is 2 bytes per parameter (plus a packed copy of nothing: the heads are untied). q8:
  // decoder and head at 1.0625 bytes per weight, embedding and tower bf16. q4: decoder at
  // 0.5625, head q8, embedding bf16, tower q8 except its FFN down-projections (4304 columns are
  // not whole 32-column blocks), which stay bf16.
  for (const Expect& e :
       {Expect{"qwen3-vl-8b", 17.53, 10.44, 6.56}, Expect{"qwen3-vl-32b", 66.71, 36.73, 20.70}}) {
    SCOPED_TRACE(e.preset);
    const auto shapes = preset_shapes(e.preset);
    const double bf16 = static_cast<double>(packed_weight_bytes(shapes, weight_types_for("bf16")));
    const double q8 = static_cast<double>(packed_weight_bytes(shapes, weight_types_for("q8")));
    const double q4 = static_cast<double>(packed_weight_bytes(shapes, weight_types_for("q4")));
    std::printf("%s: bf16 %.2f GB, q8 %.2f GB, q4 %.2f GB\n", e.preset, bf16 / 1e9, q8 / 1e9,
                q4 / 1e9);
    EXPECT_NEAR(bf16 / 1e9, e.bf16_gb, 0.01);
    EXPECT_NEAR(q8 / 1e9, e.q8_gb, 0.01);
    EXPECT_NEAR(q4 / 1e9, e.q4_gb, 0.01);
  }
}

}  // namespace
}  // namespace qvl
