// Everything read from a model (a Hugging Face folder or a pre-packed file), loaded once and
// shared by all requests.
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
  std::string dir;  // the model folder, or the pre-packed file
  ModelConfig config;
  GenerationConfig generation;
  PreprocessConfig preprocess;  // the reference processor's settings (HF defaults)
  WeightStore store;
  TextWeights text_weights;
  VisionWeights vision_weights;
  Tokenizer tokenizer;
};

// Loads a model folder, or a pre-packed model file (`qvl quantize`, model/packed_file.h) whose
// matrices are used in place from the mmap. quant: "exact", "bf16", "q8" or "q4"; empty means
// q8 for a folder and the stored type for a pre-packed file (which cannot be loaded as another
// type). Throws qvl::Error naming the missing or broken file. Warns (log) when the model ships a
// chat template qvl does not recognise. lm_head: the output head's type (see weight_types_for);
// empty = the default for quant, or as stored in a pre-packed file (another type is an error).
// vision_quant: the vision tower's big matrices ("", "bf16" or "q8", see weight_types_for); empty
// means bf16 for a folder and as stored for a file.
// Fails with a message that says what is wrong with `dir` as a model folder: missing, not a
// folder, unreadable (with the system's reason), or without a readable config.json.
void require_model_folder(const std::string& dir);

std::unique_ptr<LoadedModel> load_model(const std::string& path, const std::string& quant,
                                        const std::string& lm_head = "",
                                        const std::string& vision_quant = "");

// Bytes of the model's weights as loaded: a pre-packed file's tensors (mapped in place), or a
// folder's checkpoint (mapped) plus the matrices packed from it at load (owned copies).
int64_t loaded_weight_bytes(const LoadedModel& model);
// The same (kept for callers that predate pre-packed files).
inline std::unique_ptr<LoadedModel> load_model_folder(const std::string& path,
                                                      const std::string& quant,
                                                      const std::string& lm_head = "",
                                                      const std::string& vision_quant = "") {
  return load_model(path, quant, lm_head, vision_quant);
}

}  // namespace qvl
