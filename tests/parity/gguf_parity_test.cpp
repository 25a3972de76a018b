// The golden model written as a GGUF pair (llama.cpp's layout, tests/model/gguf_tiny_writer.h)
// and run through the public API with exact weights: prompt ids from the GGUF's own tokenizer,
// vision from the mmproj, and the golden greedy tokens (steps whose top-2 margin is large enough
// for the type's weight rounding).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <tuple>
#include <vector>

#include "../model/gguf_tiny_writer.h"
#include "base/error.h"
#include "base/mapped_file.h"
#include "golden.h"
#include "model/config.h"
#include "model/config_json.h"
#include "model/gguf_config.h"
#include "model/gguf_weights.h"
#include "qvl/engine.h"

namespace qvl::testing {
namespace {

// Writes the golden model as a GGUF pair of `type` into a folder of its own; returns the folder.
std::string gguf_folder(GgmlType type) {
  // Per process and golden folder: parity.* and parity.tiny_b.* run side by side under ctest -j.
  const std::string dir = ::testing::TempDir() + "/qvl_gguf_parity_" + std::to_string(::getpid()) +
                          "_" + ggml_type_name(type);
  EXPECT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  // Removed when the test program ends.
  static struct Cleanup {
    std::vector<std::string> dirs;
    ~Cleanup() {
      for (const std::string& d : dirs) std::filesystem::remove_all(d);
    }
  } cleanup;
  cleanup.dirs.push_back(dir);
  TinyGgufWriter(golden_dir(), type)
      .write(dir + "/model-" + ggml_type_name(type) + ".gguf",
             dir + "/mmproj-" + ggml_type_name(type) + ".gguf");
  return dir;
}

// The tiny GGUF writer and qvl's GGUF loader cover the dense models (llama.cpp's qwen3vl); a
// mixture's golden folder (qwen3vlmoe's expert tensors) skips these tests.
bool golden_is_mixture() {
  return load_model_config(golden_dir()).text.num_experts > 0;
}
constexpr const char* kMixtureSkip = "GGUF pairs of mixture-of-experts models are not supported";

std::unique_ptr<Engine> load(const std::string& model, const std::string& mmproj = "",
                             const std::string& quant = "exact") {
  EngineOptions o;
  o.model_dir = model;
  o.mmproj = mmproj;
  o.quant = quant;
  o.image_min_tokens = 64;  // the reference processor's defaults
  o.image_max_tokens = 16384;
  return Engine::load(o);
}

void check_goldens(Engine& engine, float min_margin) {
  for_each_golden_case([&](const std::string& case_name) {
    GoldenCase c;
    for (auto& g : load_golden_cases())
      if (g.name == case_name) c = g;
    ASSERT_FALSE(c.name.empty());
    const GenerationResult r = engine.generate(greedy_request(c));
    EXPECT_EQ(r.prompt_ids, c.i64("input_ids"));
    const auto want = c.i64("gen.tokens");
    const auto margins = c.f32("gen.step_margin");
    ASSERT_EQ(r.completion_ids.size(), want.size());
    // Once a step differs the rest follows another prefix: compare up to the first small margin.
    for (size_t s = 0; s < want.size() && margins[s] >= min_margin; ++s) {
      EXPECT_EQ(r.completion_ids[s], want[s]) << "step " << s;
    }
  });
}

// F16 and BF16 hold the bf16 checkpoint exactly: the golden tokens as the safetensors folder gives.
TEST(GgufParity, Bf16PairInAFolderGivesTheGoldens) {
  if (golden_is_mixture()) GTEST_SKIP() << kMixtureSkip;
  auto engine = load(gguf_folder(GgmlType::kBF16));
  check_goldens(*engine, 1e-3f);
}

TEST(GgufParity, F16PairWithMmprojGivesTheGoldens) {
  if (golden_is_mixture()) GTEST_SKIP() << kMixtureSkip;
  const std::string dir = gguf_folder(GgmlType::kF16);
  auto engine = load(dir + "/model-F16.gguf", dir + "/mmproj-F16.gguf");
  check_goldens(*engine, 1e-3f);
}

// Q8_0 rounds each weight by up to absmax / 254 of its block: steps whose top-2 logit margin
// the rounding cannot close.
TEST(GgufParity, Q8PairGivesTheGoldensWhereTheMarginAllows) {
  if (golden_is_mixture()) GTEST_SKIP() << kMixtureSkip;
  const std::string dir = gguf_folder(GgmlType::kQ8_0);
  auto engine = load(dir + "/model-Q8_0.gguf");  // the projector beside it is found
  check_goldens(*engine, 0.05f);
}

// The default q8 runs Q8_0 matrices from their repacked bytes (no fp32 copy; the same bytes as
// packing the dequantized weights, tests/model/gguf_model_test.cpp), with int8 activations.
TEST(GgufParity, Q8PairRunsInQ8WhereTheMarginAllows) {
  if (golden_is_mixture()) GTEST_SKIP() << kMixtureSkip;
  const std::string dir = gguf_folder(GgmlType::kQ8_0);
  auto engine = load(dir, "", "q8");
  check_goldens(*engine, 0.1f);
}

TEST(GgufParity, AmbiguousFoldersAndMissingProjectorsAreRefused) {
  if (golden_is_mixture()) GTEST_SKIP() << kMixtureSkip;
  const std::string dir = gguf_folder(GgmlType::kBF16);
  ASSERT_EQ(std::system(("cp '" + dir + "/model-BF16.gguf' '" + dir + "/other.gguf'").c_str()), 0);
  try {
    load(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 language model(s)"), std::string::npos) << e.what();
  }
  ASSERT_EQ(std::system(("rm '" + dir + "/mmproj-BF16.gguf'").c_str()), 0);
  try {
    load(dir + "/model-BF16.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--mmproj"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qvl::testing

namespace qvl::testing {
namespace {

// Pairs written by llama.cpp's own converter (scripts/make_gguf_fixtures.sh, from the golden
// model): QVL_GGUF_FIXTURES names its output folder. The script needs npm and Debian's Python
// packages (numpy, torch, tqdm, sentencepiece), so without the folder this test is skipped.
// The fixtures' folder when it holds `pair` made from this golden model; else "" and why not
// (the same tests also run on other golden folders, parity.tiny_b.*).
std::string fixtures_for_golden(const std::string& pair, std::string* why) {
  const char* env = std::getenv("QVL_GGUF_FIXTURES");
  const std::string dir = env ? env : "";
  if (dir.empty() || !file_exists(dir + "/" + pair + "/model.gguf")) {
    *why = "QVL_GGUF_FIXTURES does not name the output of scripts/make_gguf_fixtures.sh with its " +
           pair + " pair";
    return "";
  }
  const GgufPair gguf{GgufFile::open(dir + "/" + pair + "/model.gguf"),
                      GgufFile::open(dir + "/" + pair + "/mmproj.gguf")};
  if (model_config_json(gguf_model_config(gguf.text, gguf.vision)) !=
      model_config_json(load_model_config(golden_dir()))) {
    *why = "the fixtures in " + dir + " were made from another model than " + golden_dir();
    return "";
  }
  return dir;
}

TEST(GgufConverterParity, ConverterPairsGiveTheGoldens) {
  std::string why;
  const std::string dir = fixtures_for_golden("f16", &why);
  if (dir.empty()) GTEST_SKIP() << why;
  for (const auto& [type, quant, margin] :
       std::vector<std::tuple<std::string, std::string, float>>{{"f16", "exact", 1e-3f},
                                                                {"bf16", "exact", 1e-3f},
                                                                {"q8_0", "exact", 0.05f},
                                                                {"q8_0", "q8", 0.1f}}) {
    SCOPED_TRACE(type + " " + quant);
    auto engine = load(dir + "/" + type + "/model.gguf", dir + "/" + type + "/mmproj.gguf", quant);
    check_goldens(*engine, margin);
  }
}

// llama-quantize's Q4_K_M of the F16 model (the tiny model's rows are narrower than 256, so it
// holds its fallback types) runs exact on the dequantized weights and in q8 from them.
TEST(GgufConverterParity, QuantizedPairGivesTheGoldensWhereTheMarginAllows) {
  std::string why;
  const std::string dir = fixtures_for_golden("q4_k_m", &why);
  if (dir.empty()) GTEST_SKIP() << why;
  for (const std::string quant : {"exact", "q8"}) {
    SCOPED_TRACE(quant);
    auto engine = load(dir + "/q4_k_m/model.gguf", dir + "/q4_k_m/mmproj.gguf", quant);
    check_goldens(*engine, 0.3f);
  }
}

}  // namespace
}  // namespace qvl::testing
