// Writes a pre-packed model file (packed_file.h) from a model folder: what `qvl quantize` does
// with the weights. Matrices are packed exactly as loading the folder with the same --quant
// packs them, one at a time (multi-threaded), and written as they are made, so memory holds
// one packed matrix, not the model.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"

namespace qvl {

struct PackedFileExtras {
  std::vector<TensorSpec> blobs;                // embedded files and the compact tokenizer
  std::map<std::string, std::string> metadata;  // added to the file's own entries
};

struct PackedFileSummary {
  size_t packed_matrices = 0;
  size_t stored_tensors = 0;  // written as the folder stores them
};

// quant: "bf16", "q8" or "q4" ("exact" is the folder itself and throws kInvalidArgument);
// vision_quant as weight_types_for takes it ("" = bf16).
// Writes out_path atomically. Throws qvl::Error naming the folder, tensor or output file.
PackedFileSummary write_packed_model_file(const std::string& model_dir, const std::string& quant,
                                          const std::string& out_path,
                                          const PackedFileExtras& extras,
                                          const std::string& vision_quant = "");

// The same from an opened store whose packable matrices it already holds packed in the types
// asked for (a GGUF pair opened with GgufPacking::pack_plain): those are written as they are,
// the output head is packed from the embedding (or lm_head.weight), the rest as stored.
PackedFileSummary write_packed_store_file(const ModelConfig& config, const WeightStore& store,
                                          const std::string& quant, const std::string& out_path,
                                          const PackedFileExtras& extras,
                                          const std::string& vision_quant = "");

// The same from generated tensors (`qvl gen-model --quant`) under the names loaders take (experts
// one matrix each). A tensor `lazy` names is made only when it is packed and leaves memory after,
// so that a model larger than memory (30B-A3B: 60 GB as bf16) is written in the memory of the
// others; every lazy tensor must be one the file stores packed (throws kInvalidArgument).
PackedFileSummary write_packed_generated_file(const ModelConfig& config,
                                              const std::vector<TensorSpec>& tensors,
                                              const std::function<bool(const std::string&)>& lazy,
                                              const std::string& quant, const std::string& out_path,
                                              const PackedFileExtras& extras);

}  // namespace qvl
