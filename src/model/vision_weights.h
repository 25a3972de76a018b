// Weights of the Qwen3-VL vision tower ("model.visual.*").
#pragma once

#include <vector>

#include "model/config.h"
#include "model/safetensors.h"
#include "model/weight_types.h"
#include "ops/packed_matrix.h"
#include "ops/weight_ref.h"

namespace qvl {

struct LinearWeights {
  ops::PackedMatrix weight;  // [out, in]
  std::vector<float> bias;
};

struct LayerNormWeights {
  std::vector<float> weight, bias;
};

struct VisionBlockWeights {
  LayerNormWeights norm1, norm2;
  LinearWeights qkv, proj, fc1, fc2;
};

// Merger: LayerNorm (per patch, or over the 2x2 concatenation for DeepStack), fc1, GELU, fc2.
struct MergerWeights {
  bool norm_after_concat = false;
  LayerNormWeights norm;
  LinearWeights fc1, fc2;
};

struct VisionWeights {
  // Conv3d kernel as a matrix with the temporal slices summed: [hidden, C * P * P], valid for
  // still images whose frames are identical copies.
  std::vector<float> patch_embed_still;
  ops::PackedMatrix patch_embed;  // patch_embed_still packed for the kernels
  // The whole kernel [hidden, C * T * P * P], columns (channel, frame, y, x) as pixel_values rows:
  // for video frame pairs, whose frames differ.
  std::vector<float> patch_embed_frames_f32;
  ops::PackedMatrix patch_embed_frames;
  std::vector<float> patch_embed_bias;
  ops::WeightRef pos_embed;  // [num_position_embeddings, hidden]
  std::vector<VisionBlockWeights> blocks;
  MergerWeights merger;
  std::vector<MergerWeights> deepstack_mergers;  // one per deepstack_visual_indexes entry
};

// types.vision for the big matrices, types.vision_patch for the patch embedding.
VisionWeights load_vision_weights(const VisionConfig& config, const WeightStore& store,
                                  const WeightTypes& types);
// Every matrix in one type.
VisionWeights load_vision_weights(const VisionConfig& config, const WeightStore& store,
                                  ops::QuantType type = ops::QuantType::kExact);

}  // namespace qvl
