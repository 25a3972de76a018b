// Model presets for `qvl gen-model` and size arithmetic: the dense Qwen3-VL shapes (values of
// the published config.json files, see docs/model-family.md) and tiny test shapes, as
// config.json and as the tensor list of a model.safetensors with deterministic random bf16
// values. Values are made only when a tensor is written, so a 32B preset's list is cheap.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/safetensors_writer.h"

namespace qvl {

// tiny, tiny-odd, tiny-moe, qwen3-vl-2b, qwen3-vl-4b, qwen3-vl-8b, qwen3-vl-32b,
// qwen3-vl-30b-a3b.
const std::vector<std::string>& model_preset_names();

// The preset's config.json. Throws qvl::Error(kInvalidArgument) for an unknown name.
nlohmann::ordered_json preset_config_json(const std::string& preset);

// How a mixture of experts' weights are named: fused per layer as transformers saves them
// (experts.gate_up_proj, experts.down_proj), or one matrix each as loaders take them
// (experts.<e>.gate_proj.weight ...: model/fused_experts.h).
enum class ExpertLayout { kFused, kPerExpert };

// The preset's tensors under their Hugging Face names (an untied preset has lm_head.weight).
std::vector<TensorSpec> preset_tensors(const std::string& preset, uint64_t seed,
                                       ExpertLayout layout = ExpertLayout::kFused);

}  // namespace qvl
