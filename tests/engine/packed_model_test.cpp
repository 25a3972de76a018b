// Through the public API: a pre-packed file made by quantize_model_folder answers exactly as the
// model folder loaded with the same --quant (prompt ids, greedy tokens, text, with an image),
// and --quant choices that do not match the file are clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "base/error.h"
#include "base/mapped_file.h"
#include "engine/loaded_model.h"
#include "engine/model_quantizer.h"
#include "qvl/engine.h"
#include "same_answers.h"

namespace qvl {
namespace {

const std::string kTiny = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";

std::string temp_path(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/qvl_packed_engine";
  std::filesystem::create_directories(dir);
  return dir + "/" + name;
}

const std::string kImage = kTiny + "/images/a_iv_shapes_256x200.png";

std::unique_ptr<Engine> load(const std::string& model, const std::string& quant,
                             const std::string& vision_quant = "") {
  return testing::load_engine(model, quant, vision_quant);
}

TEST(PackedModel, SameAnswersAsTheFolderForEveryQuant) {
  for (const std::string quant : {"bf16", "q8", "q4"}) {
    SCOPED_TRACE(quant);
    const std::string file = temp_path("tiny-" + quant + ".qvl");
    const QuantizeSummary s = quantize_model_folder(kTiny, quant, file);
    EXPECT_GT(s.packed_matrices, 0u);
    EXPECT_EQ(s.embedded_files, 6u);  // 3 configs, tokenizer.json, tokenizer_config, template
    const auto from_folder = load(kTiny, quant);
    const auto from_file = load(file, "");  // as stored
    EXPECT_EQ(from_file->info().vocab_size, from_folder->info().vocab_size);
    EXPECT_EQ(from_file->info().context_length, from_folder->info().context_length);
    EXPECT_EQ(from_file->info().default_sampling.temperature,
              from_folder->info().default_sampling.temperature);
    testing::expect_same_answers(*from_folder, *from_file, kImage);
    // Asking for the stored type explicitly is the same as omitting it.
    EXPECT_NO_THROW(load(file, quant));
  }
}

TEST(PackedModel, OtherQuantThanStoredIsAClearError) {
  const std::string file = temp_path("tiny-q4-only.qvl");
  quantize_model_folder(kTiny, "q4", file);
  for (const std::string quant : {"q8", "bf16", "exact"}) {
    try {
      load(file, quant);
      ADD_FAILURE() << quant;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(msg.find(file), std::string::npos) << msg;
      EXPECT_NE(msg.find("pre-packed as q4"), std::string::npos) << msg;
    }
  }
}

TEST(PackedModel, OtherLmHeadThanStoredIsAClearError) {
  const std::string file = temp_path("tiny-q8-head.qvl");
  quantize_model_folder(kTiny, "q4", file);  // the head is stored as q8
  EXPECT_NO_THROW(load_model(file, "", "q8"));
  try {
    load_model(file, "", "q4");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("q8 lm_head"), std::string::npos) << msg;
  }
  // A folder takes any head type.
  EXPECT_EQ(load_model(kTiny, "q4", "q4")->text_weights.lm_head.type(), ops::QuantType::kQ4Strips);
}

TEST(PackedModel, Q8VisionFileAnswersAsTheFolder) {
  const std::string file = temp_path("tiny-q8-vq8.qvl");
  quantize_model_folder(kTiny, "q8", file, "q8");
  const auto from_folder = load(kTiny, "q8", "q8");
  const auto from_file = load(file, "");
  EXPECT_EQ(from_file->info().vision_weights, "q8");
  EXPECT_EQ(from_folder->info().vision_weights, "q8");
  EXPECT_EQ(load(kTiny, "q8")->info().vision_weights, "bf16");  // the default
  const GenerationRequest image = testing::answer_requests(kImage)[1];
  const Engine::ImageEmbeddings a = from_folder->embed_image(image.images[0]);
  const Engine::ImageEmbeddings b = from_file->embed_image(image.images[0]);
  EXPECT_GT(a.tokens, 0);
  EXPECT_EQ(a.values, b.values);  // bit-identical vision output
  const GenerationResult ga = from_folder->generate(image);
  const GenerationResult gb = from_file->generate(image);
  EXPECT_EQ(gb.completion_ids, ga.completion_ids);
  try {
    load(file, "", "bf16");
    ADD_FAILURE() << "a q8-vision file loaded as bf16 vision";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("q8 vision tower"), std::string::npos) << e.what();
  }
}

TEST(PackedModel, QuantizeRejectsBadInput) {
  EXPECT_THROW(quantize_model_folder(kTiny, "q8", temp_path("x.qvl"), "q4"), Error);
  EXPECT_THROW(quantize_model_folder(kTiny, "exact", temp_path("x.qvl")), Error);
  EXPECT_THROW(quantize_model_folder(kTiny, "q5", temp_path("x.qvl")), Error);
  EXPECT_THROW(quantize_model_folder(temp_path(""), "q4", temp_path("x.qvl")), Error);
  EXPECT_FALSE(std::filesystem::exists(temp_path("x.qvl")));
}

TEST(PackedModel, MissingEmbeddedConfigNamesTheFile) {
  // A valid packed file of weights only (no embedded files) is refused at load.
  const std::string file = temp_path("weights-only.qvl");
  quantize_model_folder(kTiny, "q8", file);
  // Rename the embedded config tensor in place: same length, so offsets stay valid.
  std::string bytes;
  {
    const MappedFile f(file);
    bytes.assign(reinterpret_cast<const char*>(f.data()), f.size());
  }
  const size_t at = bytes.find("qvl.file.config.json");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 20, "qvl.file.konfig.json");
  const std::string broken = temp_path("no-config.qvl");
  {
    FILE* out = std::fopen(broken.c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), out);
    std::fclose(out);
  }
  try {
    load(broken, "");
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kCorrupt);
    EXPECT_NE(msg.find(broken), std::string::npos) << msg;
    EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace qvl
