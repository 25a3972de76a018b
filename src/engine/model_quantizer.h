// `qvl quantize`: turns a model folder into one pre-packed model file (model/packed_file.h)
// that loads in place from an mmap: packed weights plus the folder's config, tokenizer and
// chat-template files, and the tokenizer's compact form.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/safetensors_writer.h"

namespace qvl {

struct QuantizeSummary {
  size_t packed_matrices = 0;
  size_t stored_tensors = 0;
  size_t embedded_files = 0;
  size_t file_bytes = 0;
};

// quant: "bf16", "q8" or "q4"; vision_quant: "bf16", "q8" or "" (weight_types_for's default).
// Checks that the folder loads (config, generation and preprocessor configs, tokenizer) before
// writing; out_path is written atomically. Throws qvl::Error naming the folder or file.
QuantizeSummary quantize_model_folder(const std::string& model_dir, const std::string& quant,
                                      const std::string& out_path,
                                      const std::string& vision_quant = "");

// The same from a GGUF pair (llama.cpp's language model + mmproj): its matrices packed as
// loading the pair with the same --quant packs them (a Q8_0 matrix into q8 losslessly, other
// quantized ones through their dequantized values), the embedding and other vectors as loading
// stores them (F16/BF16/F32 as in the file, quantized ones as fp32), and config.json,
// generation_config.json, preprocessor_config.json, tokenizer.json and the chat template made
// from the GGUF metadata.
QuantizeSummary quantize_gguf_pair(const std::string& text_path, const std::string& mmproj_path,
                                   const std::string& quant, const std::string& out_path,
                                   const std::string& vision_quant = "");

// The same from generated tensors (`qvl gen-model --quant`): files_dir holds the files a model
// folder has besides its weights (config.json, tokenizer, ...), tensors the weights under the
// names loaders take; the experts of a mixture are made as they are packed (memory holds the
// rest of the model, not its experts).
QuantizeSummary quantize_generated_model(const std::string& files_dir,
                                         const std::vector<TensorSpec>& tensors,
                                         const std::string& quant, const std::string& out_path);

}  // namespace qvl
