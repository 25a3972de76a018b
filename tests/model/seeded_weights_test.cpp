// Seeded golden weights (model/seeded_weights.h): the PRNG and the value rule agree with the
// Python generator (scripts/hfref/seeded_weights.py, values computed there), zeroed rows stay
// zero, a file that does not match its spec is refused, and the specs of this repository's
// golden folders describe the model.safetensors their manifests name.
#include "model/seeded_weights.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "model/safetensors.h"

namespace qvl {
namespace {

TEST(SeededWeights, Splitmix64AndFnv1aAreTheReferenceFunctions) {
  // splitmix64 started at 0 (Vigna's reference outputs).
  EXPECT_EQ(splitmix64_at(0, 0), 0xe220a8397b1dcdafull);
  EXPECT_EQ(splitmix64_at(0, 1), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(splitmix64_at(0, 2), 0x06c45d188009454full);
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("lm_head.weight"), 0xab67eb515e1b6f0dull);
}

TEST(SeededWeights, ValuesAreThoseOfThePythonGenerator) {
  // stream_ints("lm_head.weight", 4321, 6, 15) and ("model.language_model.norm.weight", 4321,
  // 4, 6) in seeded_weights.py.
  SeededTensorRule matrix{"lm_head.weight", {2, 3}, 0.0f, 15, -4, false, {}};
  const int64_t matrix_k[] = {-13, -2, -12, -14, 2, -15};
  for (uint64_t j = 0; j < 6; ++j) {
    EXPECT_EQ(seeded_value(matrix, fnv1a64(matrix.name) ^ 4321, j), matrix_k[j] / 16.0f) << j;
  }
  SeededTensorRule norm{"model.language_model.norm.weight", {4}, 1.0f, 6, -5, false, {}};
  const int64_t norm_k[] = {-2, 1, -2, 2};
  for (uint64_t j = 0; j < 4; ++j) {
    EXPECT_EQ(seeded_value(norm, fnv1a64(norm.name) ^ 4321, j), 1.0f + norm_k[j] / 32.0f) << j;
  }
}

std::string small_spec(const std::string& sha256, uint64_t bytes) {
  nlohmann::ordered_json spec = {{"format", "qvl seeded weights 1"},
                                 {"bytes", bytes},
                                 {"sha256", sha256},
                                 {"seed", 7},
                                 {"metadata", {{"format", "pt"}}},
                                 {"tensors",
                                  {{{"name", "a.weight"},
                                    {"dtype", "BF16"},
                                    {"shape", {4, 3}},
                                    {"base", 0.0},
                                    {"amplitude", 15},
                                    {"scale_log2", -6},
                                    {"nonzero_rows", {{1, 2}, {3, 4}}}},
                                   {{"name", "b.weight"},
                                    {"dtype", "BF16"},
                                    {"shape", {5}},
                                    {"base", 1.0},
                                    {"amplitude", 6},
                                    {"scale_log2", -5}}}}};
  return spec.dump();
}

TEST(SeededWeights, WritesTheRuleAndZeroesTheRowsOutsideTheRanges) {
  const std::string path = ::testing::TempDir() + "/qvl_seeded_small.safetensors";
  // Any digest: the file is written, then refused and removed for not matching it.
  const SeededWeightsSpec wrong = parse_seeded_weights_spec(small_spec(std::string(64, '0'), 0));
  EXPECT_THROW(write_seeded_model(wrong, path), Error);
  EXPECT_FALSE(file_exists(path));

  write_safetensors(path, seeded_tensor_specs(wrong));
  const SafeTensorsFile file(path);  // (removing the path below leaves the mapping readable)
  const std::vector<float> a = file.get("a.weight").to_f32();
  const SeededTensorRule& rule = wrong.tensors[0];
  const uint64_t state = fnv1a64("a.weight") ^ 7;
  for (int64_t row = 0; row < 4; ++row) {
    for (int64_t col = 0; col < 3; ++col) {
      const uint64_t j = static_cast<uint64_t>(row * 3 + col);
      const float want = (row == 1 || row == 3) ? seeded_value(rule, state, j) : 0.0f;
      EXPECT_EQ(a[j], want) << row << "," << col;
    }
  }
  for (float v : file.get("b.weight").to_f32()) {
    EXPECT_GE(v, 1.0f - 6 / 32.0f);
    EXPECT_LE(v, 1.0f + 6 / 32.0f);
  }
  std::remove(path.c_str());
}

TEST(SeededWeights, RefusesSpecsItCannotFollow) {
  auto code_of = [](const std::string& text) {
    try {
      parse_seeded_weights_spec(text);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;
  };
  std::string text = small_spec("", 0);
  EXPECT_EQ(code_of("{"), ErrorCode::kCorrupt);
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  EXPECT_EQ(code_of(edited("seeded weights 1", "seeded weights 2")), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of(edited("\"BF16\"", "\"F32\"")), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of(edited("[[1,2],[3,4]]", "[[3,4],[1,2]]")), ErrorCode::kCorrupt);
  EXPECT_EQ(code_of(edited("[[1,2],[3,4]]", "[[1,5]]")), ErrorCode::kCorrupt);
  EXPECT_EQ(code_of(edited("\"scale_log2\":-6", "\"scale_log2\":-600")), ErrorCode::kCorrupt);
}

// The build regenerates the golden folders' weights and checks them against the spec's digest; the
// manifest, written by the generator from the file itself, must name the same file.
TEST(SeededWeights, GoldenFolderSpecsMatchTheirManifests) {
  for (const char* name : {"qwen3vl-tiny-b", "qwen3vl-tiny-moe"}) {
    SCOPED_TRACE(name);
    const std::string dir = std::string(QVL_SOURCE_DIR) + "/tests/testdata/" + name;
    const SeededWeightsSpec spec =
        parse_seeded_weights_spec(read_text_file(dir + "/seeded_weights.json"));
    const auto manifest = nlohmann::json::parse(read_text_file(dir + "/manifest.json"));
    const auto& file = manifest.at("files").at("model.safetensors");
    EXPECT_EQ(spec.sha256, file.at("sha256").get<std::string>());
    EXPECT_EQ(spec.bytes, file.at("bytes").get<uint64_t>());
  }
  // The build tree's copies (the build checked their sha256 when it made them).
  for (const std::string dir : {QVL_GOLDEN_TINY_B_DIR, QVL_GOLDEN_TINY_MOE_DIR}) {
    const MappedFile materialised(dir + "/model.safetensors");
    const SeededWeightsSpec spec =
        parse_seeded_weights_spec(read_text_file(dir + "/seeded_weights.json"));
    EXPECT_EQ(materialised.size(), spec.bytes) << dir;
  }
}

// The mixture-of-experts folder's expert tensors are 3-D, as transformers 4.57.6 saves them:
// gate_up_proj [experts, hidden, 2 * moe_ff] and down_proj [experts, moe_ff, hidden].
TEST(SeededWeights, MoeFolderHoldsFusedExpertTensors) {
  const SafeTensorsFile file(std::string(QVL_GOLDEN_TINY_MOE_DIR) + "/model.safetensors");
  const std::string layer = "model.language_model.layers.0.mlp.";
  EXPECT_EQ(file.get(layer + "gate.weight").shape, (std::vector<int64_t>{8, 64}));
  EXPECT_EQ(file.get(layer + "experts.gate_up_proj").shape, (std::vector<int64_t>{8, 64, 192}));
  EXPECT_EQ(file.get(layer + "experts.down_proj").shape, (std::vector<int64_t>{8, 96, 64}));
  EXPECT_NE(file.find("model.language_model.layers.2.mlp.gate_proj.weight"), nullptr);
  EXPECT_EQ(file.find("model.language_model.layers.2.mlp.experts.down_proj"), nullptr);
}

}  // namespace
}  // namespace qvl
