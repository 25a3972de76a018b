// The work a decode step does, from the weights in use: a mixture of experts reads its attention,
// router and head in full and, of its experts, the share a token runs (top_k of num_experts).
#include "engine/model_cost.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/model_presets.h"
#include "model/safetensors_writer.h"
#include "model/vision_weights.h"
#include "model/weight_types.h"

namespace qvl {
namespace {

TEST(ModelCost, AMixtureReadsTheActiveShareOfItsExperts) {
  const std::string dir = ::testing::TempDir() + "/qvl_model_cost_tiny_moe";
  std::filesystem::create_directories(dir);
  write_safetensors(dir + "/model.safetensors", preset_tensors("tiny-moe", 1));
  const ModelConfig config = parse_model_config(preset_config_json("tiny-moe").dump(), "tiny-moe");
  const WeightStore store = WeightStore::open_folder(dir);
  const WeightTypes types = weight_types_for("q4");
  const TextWeights text = load_text_weights(config, store, types);
  const VisionWeights vision = load_vision_weights(config.vision, store, types);

  int64_t all = 0, experts = 0, attention = 0;
  for (const TextLayerWeights& l : text.layers) {
    for (const ops::PackedMatrix* m : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj}) {
      attention += static_cast<int64_t>(m->size_bytes());
    }
    for_each_layer_matrix(
        l, [&](const ops::PackedMatrix& m) { all += static_cast<int64_t>(m.size_bytes()); });
    if (!l.sparse) continue;
    for (const ExpertWeights& e : l.sparse->experts) {
      for (const ops::PackedMatrix* m : {&e.gate_proj, &e.up_proj, &e.down_proj}) {
        experts += static_cast<int64_t>(m->size_bytes());
      }
    }
  }
  ASSERT_GT(attention, 0);
  ASSERT_GT(experts, 0);
  const ModelCost c = model_cost(config, text, vision, KVType::kF16);
  // 2 of 8 experts: three quarters of the experts' bytes are not read by a token.
  EXPECT_EQ(c.decode_weight_bytes, all - experts * 3 / 4 + c.lm_head_bytes);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qvl
