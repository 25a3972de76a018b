// The work of a forward pass (bytes read per decode step, operations per token and per patch),
// from the config and the weights in use: qvl::ModelCost for ModelInfo.
#pragma once

#include "model/config.h"
#include "model/kv_cache.h"
#include "model/text_decoder.h"
#include "model/vision_weights.h"
#include "qvl/engine.h"

namespace qvl {

ModelCost model_cost(const ModelConfig& config, const TextWeights& text,
                     const VisionWeights& vision, KVType kv_type);

}  // namespace qvl
