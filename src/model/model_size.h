// How big a Qwen3-VL model is, from its configuration alone: the parameters its checkpoint holds
// (for /v1/models, /props, the page's model line and size arithmetic of models that do not fit
// here) and the size in the family's naming ("2B", "8B", ...).
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"

namespace qvl {

struct ModelParameters {
  int64_t text = 0;    // token embedding, decoder layers, final norm, an untied output head
  int64_t vision = 0;  // patch embedding, position table, blocks, merger, DeepStack mergers
  // Of text, what one token computes with: a mixture's router and num_experts_per_tok experts.
  int64_t text_active = 0;
  int64_t total() const { return text + vision; }
};

ModelParameters model_parameters(const ModelConfig& config);

// The name Qwen gives a model of this many parameters: the family's sizes are named by
// rounding down to a whole number of billions, except 32B (33.4e9 parameters), which keeps
// its series name; below a billion, millions ("12M") and thousands ("350K") for test models.
std::string model_size_label(int64_t parameters);
// The label of a model: model_size_label of its parameters for dense models; for mixtures of
// experts that of the language model's total and active ones, e.g. "30B-A3B".
std::string model_size_label(const ModelConfig& config);

}  // namespace qvl
