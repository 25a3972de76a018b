// The parameter count from a configuration equals the tensors a checkpoint of that shape holds
// (every gen-model preset, tied and untied, 2 and 3 DeepStack taps), and the family's sizes get
// the names Qwen publishes them under.
#include "model/model_size.h"

#include <gtest/gtest.h>

#include "model/config.h"
#include "model/model_presets.h"
#include "model/safetensors_writer.h"

namespace qvl {
namespace {

ModelConfig preset_config(const std::string& preset) {
  return parse_model_config(preset_config_json(preset).dump(), preset);
}

TEST(ModelSize, CountsEveryTensorOfEachPreset) {
  for (const std::string& preset : model_preset_names()) {
    ModelParameters expected;
    for (const TensorSpec& t : preset_tensors(preset, 1)) {
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      (t.name.rfind("model.visual.", 0) == 0 ? expected.vision : expected.text) += n;
    }
    const ModelParameters got = model_parameters(preset_config(preset));
    EXPECT_EQ(got.text, expected.text) << preset;
    EXPECT_EQ(got.vision, expected.vision) << preset;
  }
}

TEST(ModelSize, NamesTheFamilyAsPublished) {
  EXPECT_EQ(model_size_label(model_parameters(preset_config("qwen3-vl-2b")).total()), "2B");
  EXPECT_EQ(model_size_label(model_parameters(preset_config("qwen3-vl-4b")).total()), "4B");
  EXPECT_EQ(model_size_label(model_parameters(preset_config("qwen3-vl-8b")).total()), "8B");
  EXPECT_EQ(model_size_label(model_parameters(preset_config("qwen3-vl-32b")).total()), "32B");
  EXPECT_EQ(model_size_label(30'500'000'000), "30B");
  // Mixtures: the language model's total and active parameters (30B-A3B: 30.5 B of which 2.7 B
  // run per token, 3.0 B with the embedding and head).
  const ModelConfig moe = preset_config("qwen3-vl-30b-a3b");
  const ModelParameters p = model_parameters(moe);
  EXPECT_NEAR(p.text / 1e9, 30.53, 0.01);
  EXPECT_NEAR(p.text_active / 1e9, 3.35, 0.01);
  EXPECT_EQ(model_size_label(moe), "30B-A3B");
  EXPECT_EQ(model_size_label(preset_config("qwen3-vl-2b")), "2B");
  EXPECT_EQ(model_size_label(12'345'678), "12M");
  EXPECT_EQ(model_size_label(350'000), "350K");
}

}  // namespace
}  // namespace qvl
