// config.json and generation_config.json written from parsed configurations: for a model known
// only by its GGUF metadata, so that `qvl quantize` can pre-pack it into a file whose loader reads
// those files. parse_model_config(model_config_json(c).dump()) gives c back (tested).
#pragma once

#include <nlohmann/json.hpp>

#include "model/config.h"

namespace qvl {

nlohmann::ordered_json model_config_json(const ModelConfig& config);
nlohmann::ordered_json generation_config_json(const GenerationConfig& generation);

}  // namespace qvl
