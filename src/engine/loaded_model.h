// Everything read from a model (a Hugging Face folder or a pre-packed file), loaded once and
// shared by all requests.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "image/preprocess.h"
#include "model/config.h"
#include "model/gguf_weights.h"
#include "model/safetensors.h"
#include "model/text_decoder.h"
#include "model/vision_encoder.h"
#include "model/vision_weights.h"
#include "tokenizer/chat_format.h"
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
  // Which chat template the model ships (Instruct when it is not one qvl knows).
  ChatTemplateVariant chat_variant = ChatTemplateVariant::kInstruct;
  // How the weights are stored (for /v1/models, /props and the page): "safetensors", "gguf" or
  // "qvl" (a pre-packed file), and the type of the matrices as that format names it: the
  // checkpoint's dtype ("BF16"), the GGUF file type ("Q4_K_M"), the packed type ("q4"). The
  // vision tower's may differ (a GGUF projector is a file of its own).
  std::string file_format{};
  std::string file_type{};
  std::string vision_file_type{};
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

// path may also be a GGUF language model (llama.cpp's format) with mmproj its vision projector
// ("" = the one projector GGUF beside it), or a folder holding exactly one such pair and no
// config.json (see gguf_model_loader.cpp; mmproj is for GGUF models only).
std::unique_ptr<LoadedModel> load_model(const std::string& path, const std::string& quant,
                                        const std::string& lm_head = "",
                                        const std::string& vision_quant = "",
                                        const std::string& mmproj = "");

// A GGUF pair: the language model file and its vision projector. find_gguf_pair looks in a
// folder (nullopt when it holds no GGUF file; throws Error(kInvalidArgument) naming the files
// when it is not exactly one pair); gguf_pair_for completes a language model file with the one
// projector beside it when mmproj is "".
struct GgufPairPaths {
  std::string text, mmproj;
};
std::optional<GgufPairPaths> find_gguf_pair(const std::string& dir);
GgufPairPaths gguf_pair_for(const std::string& text, const std::string& mmproj);
// The pair opened (a language model and a projector, in that order, or Error naming them), and
// what it holds besides tensors, as a Hugging Face folder's files would give it (for loading,
// and for `qvl quantize`, which writes those files into a pre-packed file).
std::shared_ptr<GgufPair> open_gguf_pair(const GgufPairPaths& pair);
struct GgufModelFiles {
  ModelConfig config;
  GenerationConfig generation;
  PreprocessConfig preprocess;
  std::string tokenizer_json;
  std::string chat_template;  // "" when the file has none
};
GgufModelFiles gguf_model_files(const GgufPair& pair);
std::unique_ptr<LoadedModel> load_gguf_model(const GgufPairPaths& pair, const std::string& quant,
                                             const std::string& lm_head = "",
                                             const std::string& vision_quant = "");

// Bytes of the model's weights as loaded: a pre-packed file's tensors (mapped in place), or a
// folder's checkpoint (mapped) plus the matrices packed from it at load (owned copies).
int64_t loaded_weight_bytes(const LoadedModel& model);
// The same (kept for callers that predate pre-packed files).
inline std::unique_ptr<LoadedModel> load_model_folder(const std::string& path,
                                                      const std::string& quant,
                                                      const std::string& lm_head = "",
                                                      const std::string& vision_quant = "",
                                                      const std::string& mmproj = "") {
  return load_model(path, quant, lm_head, vision_quant, mmproj);
}

}  // namespace qvl
