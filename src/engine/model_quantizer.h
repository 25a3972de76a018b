// `qvl quantize`: turns a model folder into one pre-packed model file (model/packed_file.h)
// that loads in place from an mmap: packed weights plus the folder's config, tokenizer and
// chat-template files, and the tokenizer's compact form.
#pragma once

#include <cstddef>
#include <string>

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

}  // namespace qvl
