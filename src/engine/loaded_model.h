// Everything read from a model folder, loaded once and shared by all requests.
#pragma once

#include <memory>
#include <string>

#include "image/preprocess.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/text_decoder.h"
#include "model/vision_encoder.h"
#include "model/vision_weights.h"
#include "tokenizer/tokenizer.h"

namespace qvl {

struct LoadedModel {
  std::string dir;
  ModelConfig config;
  GenerationConfig generation;
  PreprocessConfig preprocess;  // the reference processor's settings (HF defaults)
  WeightStore store;
  TextWeights text_weights;
  VisionWeights vision_weights;
  Tokenizer tokenizer;
};

// Throws qvl::Error naming the missing or broken file. Warns (log) when the folder ships a chat
// template qvl does not recognise.
std::unique_ptr<LoadedModel> load_model_folder(const std::string& dir, const std::string& quant);

}  // namespace qvl
