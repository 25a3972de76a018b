// `qvl quantize` from a GGUF pair: the pre-packed file answers exactly as the pair loaded with
// the same --quant (prompt ids, greedy and sampled tokens, with an image), carries the pair's
// configuration, tokenizer and chat template, and every model reports what it is stored as.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "../model/gguf_tiny_writer.h"
#include "base/error.h"
#include "base/mapped_file.h"
#include "engine/model_quantizer.h"
#include "model/config.h"
#include "model/model_size.h"
#include "qvl/engine.h"
#include "same_answers.h"

namespace qvl {
namespace {

const std::string kTiny = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";

// A folder of this process's own (two test runs in two build folders must not share files),
// removed with the test.
struct TempDir {
  explicit TempDir(const std::string& tag)
      : path(::testing::TempDir() + "/qvl_gguf_quantize_" + std::to_string(::getpid()) + "_" +
             tag) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  const std::string path;
};

const std::string kImage = kTiny + "/images/a_iv_shapes_256x200.png";

std::unique_ptr<Engine> load(const std::string& model, const std::string& quant,
                             const std::string& mmproj = "") {
  return testing::load_engine(model, quant, "", mmproj);
}

TEST(GgufQuantize, PrePackedFileAnswersAsThePair) {
  // Q8_0: text matrices repacked (q8) or re-rounded (q4, bf16); F16: packed from the values.
  for (const GgmlType type : {GgmlType::kQ8_0, GgmlType::kF16}) {
    const TempDir temp(ggml_type_name(type));
    const std::string& dir = temp.path;
    testing::TinyGgufWriter(kTiny, type).write(dir + "/model.gguf", dir + "/mmproj.gguf");
    // F16 into q8 covers packing in-place types; Q8_0 every target type.
    const std::vector<std::string> quants = type == GgmlType::kQ8_0
                                                ? std::vector<std::string>{"q8", "q4", "bf16"}
                                                : std::vector<std::string>{"q8"};
    for (const std::string& quant : quants) {
      SCOPED_TRACE(std::string(ggml_type_name(type)) + " -> " + quant);
      const std::string file = dir + "/tiny-" + quant + ".qvl";
      const QuantizeSummary s =
          quantize_gguf_pair(dir + "/model.gguf", dir + "/mmproj.gguf", quant, file);
      EXPECT_GT(s.packed_matrices, 0u);
      EXPECT_EQ(s.embedded_files, 5u);  // 3 configs, tokenizer.json, the chat template
      const auto pair = load(dir + "/model.gguf", quant, dir + "/mmproj.gguf");
      const auto packed = load(file, "");  // as stored
      EXPECT_EQ(packed->info().context_length, pair->info().context_length);
      EXPECT_EQ(packed->info().variant, pair->info().variant);
      EXPECT_EQ(packed->info().default_sampling.temperature,
                pair->info().default_sampling.temperature);
      EXPECT_EQ(packed->info().default_sampling.top_k, pair->info().default_sampling.top_k);
      EXPECT_EQ(packed->info().weights, pair->info().weights);
      EXPECT_EQ(packed->info().vision_weights, pair->info().vision_weights);
      testing::expect_same_answers(*pair, *packed, kImage);
    }
  }
}

TEST(GgufQuantize, RefusesWhatItCannotWrite) {
  const TempDir temp("refuse");
  const std::string& dir = temp.path;
  testing::TinyGgufWriter(kTiny, GgmlType::kQ8_0).write(dir + "/model.gguf", dir + "/mmproj.gguf");
  EXPECT_THROW(quantize_gguf_pair(dir + "/model.gguf", dir + "/mmproj.gguf", "exact", dir + "/x"),
               Error);
  // The projector given as the language model (and the other way round).
  EXPECT_THROW(quantize_gguf_pair(dir + "/mmproj.gguf", dir + "/model.gguf", "q8", dir + "/x"),
               Error);
  EXPECT_FALSE(std::filesystem::exists(dir + "/x"));
}

TEST(ModelInfo, SaysWhatTheModelIsAndHowItIsStored) {
  const TempDir temp("info");
  const std::string& dir = temp.path;
  testing::TinyGgufWriter(kTiny, GgmlType::kQ8_0).write(dir + "/model.gguf", dir + "/mmproj.gguf");
  quantize_gguf_pair(dir + "/model.gguf", dir + "/mmproj.gguf", "q4", dir + "/tiny.qvl");
  const auto folder = load(kTiny, "");
  const auto gguf = load(dir + "/model.gguf", "q4");  // the one projector beside it
  const auto file = load(dir + "/tiny.qvl", "");
  const int64_t parameters = model_parameters(load_model_config(kTiny)).total();
  for (Engine* e : {folder.get(), gguf.get(), file.get()}) {
    EXPECT_EQ(e->info().parameters, parameters);
    EXPECT_EQ(e->info().size, model_size_label(parameters));
  }
  EXPECT_EQ(folder->info().file_format, "safetensors");
  EXPECT_EQ(folder->info().file_type, "BF16");
  EXPECT_EQ(folder->info().vision_file_type, "BF16");
  EXPECT_EQ(folder->info().weights, "q8");
  EXPECT_EQ(gguf->info().file_format, "gguf");
  EXPECT_EQ(gguf->info().file_type, "Q8_0");
  EXPECT_EQ(gguf->info().vision_file_type, "Q8_0");
  EXPECT_EQ(gguf->info().weights, "q4");
  EXPECT_EQ(file->info().file_format, "qvl");
  EXPECT_EQ(file->info().file_type, "q4");
  EXPECT_EQ(file->info().vision_file_type, "q8");
  EXPECT_EQ(file->info().weights, "q4");
}

}  // namespace
}  // namespace qvl
