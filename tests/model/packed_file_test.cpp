// Pre-packed model files: the weights they hold are bit for bit what packing the folder at load
// makes (same logits, same vision output), they are used in place, and damaged files fail with
// one clear error naming the file and tensor.
#include "model/packed_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "base/half.h"
#include "base/mapped_file.h"
#include "model/packed_file_writer.h"
#include "model/text_decoder.h"
#include "model/vision_encoder.h"
#include "model/vision_weights.h"
#include "model/weight_types.h"
#include "model_test_util.h"

namespace qvl {
namespace {

const std::string kTiny = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";

std::string fresh_dir() {
  const std::string dir = ::testing::TempDir() + "/qvl_packed_" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<float> last_logits(const ModelConfig& config, const TextWeights& w) {
  TextDecoder decoder(config.text, w);
  KVCache cache = decoder.new_cache();
  std::vector<float> hidden;
  std::vector<float> logits = testing::prefill_last_logits(
      decoder, config, cache, {151644, 872, 198, 9707, 11, 1879, 0, 151645, 198}, hidden);
  // One decode step too (m == 1 kernels).
  const int64_t n = cache.length(), next = 13, p3[3] = {n, n, n};
  std::vector<float> x(static_cast<size_t>(config.text.hidden_size));
  decoder.embed(&next, 1, x.data());
  decoder.forward(x.data(), 1, p3, cache, nullptr, hidden.data());
  logits.resize(2 * config.text.vocab_size);
  decoder.logits(hidden.data(), 1, logits.data() + config.text.vocab_size);
  return logits;
}

VisionOutput vision_output(const VisionConfig& c, const VisionWeights& w) {
  const int64_t gh = 4, gw = 6,
                dim = c.in_channels * c.temporal_patch_size * c.patch_size * c.patch_size;
  std::vector<float> pixels(static_cast<size_t>(gh * gw * dim));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  for (float& p : pixels) p = u(rng);
  return VisionEncoder(c, w).encode(pixels.data(), gh, gw);
}

std::string file_vision_name(int block) {
  return "model.visual.blocks." + std::to_string(block) + ".mlp.linear_fc1.weight";
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A copy of the tiny model with an untied head (lm_head = 2 * embedding) and config to match.
std::string untied_tiny(const std::string& dir) {
  const std::string model = dir + "/untied";
  std::filesystem::create_directories(model);
  testing::write_weights_with_untied_head(kTiny, model + "/model.safetensors", 0.01f);
  nlohmann::json config = nlohmann::json::parse(read_text_file(kTiny + "/config.json"));
  config["tie_word_embeddings"] = false;
  config["text_config"]["tie_word_embeddings"] = false;
  std::ofstream(model + "/config.json") << config.dump(2);
  return model;
}

void expect_same_model(const std::string& folder, const std::string& quant, const std::string& file,
                       const std::string& vision_quant = "") {
  SCOPED_TRACE(folder + " " + quant + " vision " + vision_quant);
  const ModelConfig config = load_model_config(folder);
  const WeightTypes types = weight_types_for(quant, "", vision_quant);
  const WeightStore folder_store = WeightStore::open_folder(folder);
  const TextWeights folder_text = load_text_weights(config, folder_store, types);
  const VisionWeights folder_vision = load_vision_weights(config.vision, folder_store, types);

  const PackedModelFile packed = PackedModelFile::open(file);
  EXPECT_EQ(ops::quant_type_name(packed.quant()), quant);
  EXPECT_EQ(packed.vision_quant(), ops::quant_type_name(types.vision));
  const TextWeights file_text =
      load_packed_text_weights(config, packed.store(), types, packed.lm_head_tied());
  const VisionWeights file_vision = load_vision_weights(config.vision, packed.store(), types);
  EXPECT_EQ(file_vision.blocks.at(0).fc1.weight.type(), stored_type(types.vision));
  EXPECT_EQ(file_vision.blocks.at(0).fc1.weight.bytes(),
            packed.store().packed(file_vision_name(0))->bytes->data);  // used in place
  EXPECT_EQ(file_text.tied_lm_head, folder_text.tied_lm_head);

  // Packed matrices are views into the file's map, byte-identical to packing at load.
  const auto& layer = file_text.layers[1];
  EXPECT_EQ(layer.up_proj.type(), stored_type(types.text));
  EXPECT_EQ(layer.up_proj.size_bytes(), folder_text.layers[1].up_proj.size_bytes());
  EXPECT_EQ(std::memcmp(layer.up_proj.bytes(), folder_text.layers[1].up_proj.bytes(),
                        layer.up_proj.size_bytes()),
            0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(layer.up_proj.bytes()) % kPackedAlignment, 0u);
  EXPECT_EQ(file_text.lm_head.type(), stored_type(types.lm_head));
  EXPECT_EQ(std::memcmp(file_text.lm_head.bytes(), folder_text.lm_head.bytes(),
                        folder_text.lm_head.size_bytes()),
            0);

  EXPECT_TRUE(same_bits(last_logits(config, file_text), last_logits(config, folder_text)));
  const VisionOutput a = vision_output(config.vision, file_vision);
  const VisionOutput b = vision_output(config.vision, folder_vision);
  EXPECT_TRUE(same_bits(a.embeds, b.embeds));
  ASSERT_EQ(a.deepstack.size(), b.deepstack.size());
  for (size_t k = 0; k < a.deepstack.size(); ++k)
    EXPECT_TRUE(same_bits(a.deepstack[k], b.deepstack[k]));
}

TEST(PackedFile, SameLogitsAndVisionAsPackingTheFolder) {
  const std::string dir = fresh_dir();
  const std::string untied = untied_tiny(dir);
  for (const std::string quant : {"bf16", "q8", "q4"}) {
    for (const std::string& folder : {kTiny, untied}) {
      const std::string file = dir + "/m-" + quant + ".qvl";
      const PackedFileSummary s = write_packed_model_file(folder, quant, file, {});
      // 7 per text layer, the head, 4 per vision block, 2 per merger.
      const ModelConfig c = load_model_config(folder);
      EXPECT_EQ(s.packed_matrices,
                static_cast<size_t>(7 * c.text.num_layers + 1 + 4 * c.vision.depth +
                                    2 * (1 + c.vision.deepstack_visual_indexes.size())));
      EXPECT_FALSE(std::filesystem::exists(file + ".partial"));
      expect_same_model(folder, quant, file);
    }
  }
}

TEST(PackedFile, Q8VisionSameAsPackingTheFolder) {
  const std::string dir = fresh_dir();
  const std::string file = dir + "/m-q8-vq8.qvl";
  write_packed_model_file(kTiny, "q4", file, {}, "q8");
  expect_same_model(kTiny, "q4", file, "q8");
  // Loading it as bf16 vision is a clear error, not a silent repack.
  const PackedModelFile packed = PackedModelFile::open(file);
  EXPECT_THROW(load_vision_weights(load_model_config(kTiny).vision, packed.store(),
                                   weight_types_for("q4", "", "bf16")),
               Error);
}

TEST(PackedFile, UntiedHeadReplacesTheStoredOne) {
  const std::string dir = fresh_dir();
  const std::string untied = untied_tiny(dir);
  write_packed_model_file(untied, "q8", dir + "/u.qvl", {});
  const PackedModelFile f = PackedModelFile::open(dir + "/u.qvl");
  EXPECT_FALSE(f.lm_head_tied());
  EXPECT_FALSE(f.store().has("lm_head.weight"));  // only the packed head, no bf16 copy
  ASSERT_NE(f.store().packed("lm_head.weight"), nullptr);
  EXPECT_TRUE(f.store().has("model.language_model.embed_tokens.weight"));
  EXPECT_TRUE(PackedModelFile::open(dir + "/u.qvl")
                  .store()
                  .packed("model.language_model.layers.0.mlp.down_proj.weight"));
}

TEST(PackedFile, ExactCannotBePrePacked) {
  const std::string dir = fresh_dir();
  EXPECT_THROW(write_packed_model_file(kTiny, "exact", dir + "/x.qvl", {}), Error);
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.qvl"));
}

// Rewrites the JSON header of a safetensors file (data section unchanged), padded so the data
// starts at `residue` modulo 64.
void edit_header(const std::string& in, const std::string& out,
                 const std::function<void(nlohmann::ordered_json&)>& edit, size_t residue = 0) {
  const MappedFile f(in);
  uint64_t len;
  std::memcpy(&len, f.data(), 8);
  auto header = nlohmann::ordered_json::parse(f.data() + 8, f.data() + 8 + len);
  edit(header);
  std::string text = header.dump();
  while ((8 + text.size()) % 64 != residue) text.push_back(' ');
  const uint64_t new_len = text.size();
  std::ofstream o(out, std::ios::binary);
  o.write(reinterpret_cast<const char*>(&new_len), 8);
  o << text;
  o.write(reinterpret_cast<const char*>(f.data() + 8 + len),
          static_cast<std::streamsize>(f.size() - 8 - len));
}

struct Failure {
  ErrorCode code;
  std::string message;
};

Failure open_error(const std::string& path) {
  try {
    PackedModelFile::open(path);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {ErrorCode::kInternal, "(no error)"};
}

class PackedFileErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // ctest runs each test of the suite as its own process, possibly at the same time.
    dir_ =
        new std::string(::testing::TempDir() + "/qvl_packed_errors_" + std::to_string(::getpid()));
    std::filesystem::remove_all(*dir_);
    std::filesystem::create_directories(*dir_);
    write_packed_model_file(kTiny, "q4", good(), {});
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static std::string good() { return *dir_ + "/good.qvl"; }
  static std::string path(const std::string& name) { return *dir_ + "/" + name; }
  // Edits the good file's header into `name` and returns the open error.
  static Failure edited(const std::string& name,
                        const std::function<void(nlohmann::ordered_json&)>& edit,
                        size_t residue = 0) {
    edit_header(good(), path(name), edit, residue);
    return open_error(path(name));
  }
  static std::string* dir_;
};
std::string* PackedFileErrors::dir_ = nullptr;

const std::string kUp = "model.language_model.layers.2.mlp.up_proj.weight";

TEST_F(PackedFileErrors, GoodFileOpens) {
  EXPECT_EQ(open_error(good()).message, "(no error)");
}

TEST_F(PackedFileErrors, TruncatedFile) {
  const std::string text = read_text_file(good());
  for (size_t keep : {size_t{4}, size_t{1000}, text.size() / 2, text.size() - 1}) {
    std::ofstream(path("trunc.qvl"), std::ios::binary) << text.substr(0, keep);
    const Failure f = open_error(path("trunc.qvl"));
    EXPECT_EQ(f.code, ErrorCode::kCorrupt) << keep << ": " << f.message;
    EXPECT_NE(f.message.find(path("trunc.qvl")), std::string::npos) << f.message;
    EXPECT_NE(f.message.find("truncated"), std::string::npos) << f.message;
  }
}

TEST_F(PackedFileErrors, PlainSafetensorsIsNotAPackedFile) {
  const Failure f = open_error(kTiny + "/model.safetensors");
  EXPECT_EQ(f.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(f.message.find("not a qvl pre-packed model file"), std::string::npos) << f.message;
}

TEST_F(PackedFileErrors, WrongMarkerVersionLayoutOrQuant) {
  Failure f = edited("marker.qvl", [](auto& h) { h["__metadata__"][kPackedFormatKey] = "gguf"; });
  EXPECT_NE(f.message.find("not a qvl pre-packed model file"), std::string::npos) << f.message;
  // Version 1 files (q8 vision in the GEMV's groups) are refused with what to do.
  f = edited("version.qvl", [](auto& h) { h["__metadata__"][kPackedVersionKey] = "1"; });
  EXPECT_EQ(f.code, ErrorCode::kUnsupported);
  EXPECT_NE(f.message.find("version '1'"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("qvl quantize"), std::string::npos) << f.message;
  f = edited("noversion.qvl", [](auto& h) { h["__metadata__"].erase(kPackedVersionKey); });
  EXPECT_EQ(f.code, ErrorCode::kUnsupported) << f.message;
  f = edited("layout.qvl", [](auto& h) { h["__metadata__"][kPackedLayoutKey] = "0123"; });
  EXPECT_NE(f.message.find("kernel layouts"), std::string::npos) << f.message;
  f = edited("quant.qvl", [](auto& h) { h["__metadata__"][kPackedQuantKey] = "q3"; });
  EXPECT_EQ(f.code, ErrorCode::kCorrupt);
  EXPECT_NE(f.message.find("q3"), std::string::npos) << f.message;
}

TEST_F(PackedFileErrors, PackedTensorsMustMatchTheirDescription) {
  const std::string key = kPackedTensorPrefix + kUp;
  // 128x64 q4 (tiny's up_proj) described as 132 rows: one group more than stored.
  Failure f = edited("rows.qvl", [&](auto& h) { h["__metadata__"][key] = "q4 132 64"; });
  EXPECT_EQ(f.code, ErrorCode::kCorrupt);
  EXPECT_NE(f.message.find(kUp), std::string::npos) << f.message;
  EXPECT_NE(f.message.find(path("rows.qvl")), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("bytes"), std::string::npos) << f.message;
  f = edited("type.qvl", [&](auto& h) { h["__metadata__"][key] = "q8 128 64"; });
  EXPECT_NE(f.message.find(kUp), std::string::npos) << f.message;
  for (const char* bad : {"q4 128", "q4 -128 64", "q4 128 64 1", "exact 128 64", "q4 128 48"}) {
    f = edited("bad.qvl", [&](auto& h) { h["__metadata__"][key] = bad; });
    EXPECT_EQ(f.code, ErrorCode::kCorrupt) << bad;
    EXPECT_NE(f.message.find(kUp), std::string::npos) << bad << ": " << f.message;
  }
  f = edited("ghost.qvl", [&](auto& h) {
    h["__metadata__"][kPackedTensorPrefix + std::string("x")] = "q4 4 32";
  });
  EXPECT_NE(f.message.find("does not contain"), std::string::npos) << f.message;
  f = edited("nohead.qvl", [&](auto& h) {
    h["__metadata__"].erase(kPackedTensorPrefix + std::string(kPackedHeadName));
  });
  EXPECT_NE(f.message.find("output head"), std::string::npos) << f.message;
  // Data moved to 8 bytes past a 64-byte boundary: still valid safetensors, but not aligned.
  f = edited(
      "unaligned.qvl", [&](auto&) {}, 8);
  EXPECT_EQ(f.code, ErrorCode::kCorrupt);
  EXPECT_NE(f.message.find("aligned"), std::string::npos) << f.message;
}

TEST_F(PackedFileErrors, MismatchedTypeAtLoadNamesTheTensor) {
  const ModelConfig config = load_model_config(kTiny);
  const PackedModelFile f = PackedModelFile::open(good());
  // A store made for q4 asked for q8 decoder weights (what a newer weight_types_for could do).
  try {
    load_packed_text_weights(config, f.store(), weight_types_for("q8"), true);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("qvl quantize"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qvl
