// Qwen3-VL-MoE checkpoints (transformers 4.57) store each sparse layer's experts fused:
//   mlp.experts.gate_up_proj [E, hidden, 2 * ff]   (x * W: the gate's columns, then the up's)
//   mlp.experts.down_proj    [E, ff, hidden]
// The kernels take one [out, in] matrix per expert, so these are split and transposed into
//   mlp.experts.<e>.gate_proj.weight [ff, hidden], .up_proj.weight [ff, hidden],
//   .down_proj.weight [hidden, ff]
// (the names per-expert checkpoints use), in the stored dtype.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/safetensors.h"

namespace qvl {

// One layer's experts split: views of `bytes`, which owns the copies.
struct SplitExperts {
  std::vector<TensorView> views;
  std::shared_ptr<const void> bytes;
};

// The per-expert tensors of `layer` when the store holds its experts fused (a copy in memory: the
// size of the layer's experts), else nullopt. Throws kCorrupt naming a tensor whose dtype or shape
// does not fit the config.
std::optional<SplitExperts> split_fused_layer(const TextConfig& config, const WeightStore& store,
                                              int64_t layer);

// Replaces the fused expert tensors of every sparse layer that has them by per-expert ones, for
// the packer, which finds matrices by their names in the store. They view memory that is not made
// yet: each is made by calling its function (by name) and may be released after use
// (MADV_DONTNEED), so the packer holds one expert matrix at a time instead of all the model's
// experts (30B-A3B: 58 GB as bf16).
std::map<std::string, std::function<void()>> split_fused_experts_lazily(const TextConfig& config,
                                                                        WeightStore& store);

}  // namespace qvl
