// Qwen3-VL-MoE checkpoints (transformers 4.57) store each sparse layer's experts fused:
//   mlp.experts.gate_up_proj [E, hidden, 2 * ff]   (x * W: the gate's columns, then the up's)
//   mlp.experts.down_proj    [E, ff, hidden]
// The kernels take one [out, in] matrix per expert, so these are split and transposed into
//   mlp.experts.<e>.gate_proj.weight [ff, hidden], .up_proj.weight [ff, hidden],
//   .down_proj.weight [hidden, ff]
// (the names per-expert checkpoints use), in the stored dtype.
#pragma once

#include "model/config.h"
#include "model/safetensors.h"

namespace qvl {

// Replaces the fused expert tensors of every sparse layer that has them by per-expert ones (a
// copy in memory: about the size of the experts). Throws kCorrupt naming a tensor whose dtype or
// shape does not fit the config.
void split_fused_experts(const TextConfig& config, WeightStore& store);

}  // namespace qvl
