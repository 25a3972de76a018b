// The vision tower runs its wide projections (qkv, MLP) over row chunks and its attention over
// groups of heads to bound the memory an image holds: any chunking and grouping gives the bits of
// one product (one attention) over all patches, for every weight type and ISA level this CPU runs.
#include "model/vision_encoder.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/safetensors.h"
#include "model/vision_weights.h"
#include "model/weight_types.h"
#include "ops/packed_matrix.h"

namespace qvl {
namespace {

const std::string kTiny = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";

struct IsaScope {
  explicit IsaScope(ops::IsaLevel level) { ops::set_isa_override(level); }
  ~IsaScope() { ops::set_isa_override(std::nullopt); }
};

TEST(VisionEncoder, RowChunksGiveTheBitsOfOneProduct) {
  const ModelConfig config = load_model_config(kTiny);
  const WeightStore store = WeightStore::open_folder(kTiny);
  const VisionConfig& c = config.vision;
  // 64 merged tokens: the mergers' row chunks (a quarter of the patch chunk) split them too.
  const int64_t gh = 16, gw = 16, n = gh * gw,
                dim = c.in_channels * c.temporal_patch_size * c.patch_size * c.patch_size;
  std::vector<float> pixels(static_cast<size_t>(n * dim));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& p : pixels) p = u(rng);

  for (const WeightTypes& types :
       {weight_types_for("exact"), weight_types_for("q8"), weight_types_for("q4", "", "q8")}) {
    const VisionWeights w = load_vision_weights(c, store, types);
    for (ops::IsaLevel isa : ops::arch_isa_levels()) {
      if (!ops::cpu_runs_isa(isa)) continue;
      IsaScope scope(isa);
      const VisionOutput whole = VisionEncoder(c, w, n).encode(pixels.data(), gh, gw);
      // Patches: 2 chunks of 128, 4 of 64, 13 of 19-20, 16 of 16 (the smallest allowed), and a
      // target below 16; merged tokens: 2 chunks of 32, 4 of 16 (from 64 patches down).
      for (int64_t chunk : {128, 64, 20, 16, 5}) {
        const VisionOutput parts = VisionEncoder(c, w, chunk).encode(pixels.data(), gh, gw);
        const std::string what = std::string(ops::isa_level_name(isa)) + " " +
                                 ops::quant_type_name(w.blocks[0].qkv.weight.type()) + " chunk " +
                                 std::to_string(chunk);
        EXPECT_EQ(parts.embeds, whole.embeds) << what;
        EXPECT_EQ(parts.deepstack, whole.deepstack) << what;
      }
      // Attention one head per call (the tiny tower has 2) and over all heads at once.
      for (int64_t heads : {1, 2}) {
        const VisionOutput grouped = VisionEncoder(c, w, 64, heads).encode(pixels.data(), gh, gw);
        EXPECT_EQ(grouped.embeds, whole.embeds) << heads << " heads per attention call";
        EXPECT_EQ(grouped.deepstack, whole.deepstack) << heads << " heads per attention call";
      }
    }
  }
}

}  // namespace
}  // namespace qvl
