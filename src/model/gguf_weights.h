// The tensors of a Qwen3-VL GGUF pair under the Hugging Face names the model loaders read
// (llama.cpp's converter renames them and splits the patch embedding's Conv3d kernel into one
// slice per frame; these steps are undone here). Per tensor type:
//   F32, F16, BF16: used in place from the mmap (no copy, like a safetensors checkpoint);
//   Q8_0 matrices the model runs in q8 (GgufPacking): repacked into qvl's q8 strips, losslessly
//     (model/gguf_repack.h), with no fp32 copy;
//   other quantized matrices the model runs in bf16/q8/q4: dequantized and packed into that type
//     chunk by chunk, with no fp32 copy (q8/q4 round again: K-quants have no qvl format yet);
//   quantized tensors otherwise (exact runs, embeddings, vectors): dequantized to fp32. fp32
//     holds each of their values (scale x quant, minus scaled min) exactly as ggml computes it,
//     so the exact path runs on the very weights llama.cpp would.
// Other types are refused naming the tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/gguf_file.h"
#include "model/safetensors.h"
#include "ops/packed_matrix.h"

namespace qvl {

// The opened pair: the language model and the vision projector ("mmproj").
struct GgufPair {
  GgufFile text;
  GgufFile vision;
};

// What loading did, for the log and the tests.
struct GgufLoadStats {
  int64_t in_place = 0;      // tensors viewed in the mmap
  int64_t dequantized = 0;   // tensors converted to fp32 copies
  int64_t repacked = 0;      // Q8_0 matrices repacked as q8 strips
  int64_t packed = 0;        // other quantized matrices dequantized into a packed type
  int64_t copied_bytes = 0;  // bytes of those copies
  int64_t ignored = 0;       // tensors qvl has no use for
  double dequantize_ms = 0;
};

// The Hugging Face name of a GGUF tensor, or "" for a tensor Qwen3-VL does not have.
// deepstack: the vision config's deepstack_visual_indexes (GGUF numbers DeepStack mergers by
// vision block, Hugging Face by position in that list).
std::string hf_tensor_name(const std::string& gguf_name, bool vision,
                           const std::vector<int64_t>& deepstack);

// The stored types (weight_types.h stored_type) the model runs its matrices in: the decoder's
// projections (text) and the vision tower's big matrices (vision). Quantized GGUF matrices become
// pre-packed tensors of the store in these types rather than fp32 copies; kExact keeps fp32.
struct GgufPacking {
  ops::QuantType text = ops::QuantType::kExact;
  ops::QuantType vision = ops::QuantType::kExact;
  // F32/F16/BF16 matrices are packed too instead of used in place (for `qvl quantize`, which
  // writes every packable matrix packed).
  bool pack_plain = false;
};

// A WeightStore over the pair's tensors (the pair is kept alive by the store). Throws
// Error(kUnsupported) naming a tensor of a type qvl cannot read, kCorrupt for a patch embedding
// whose slices differ in shape.
WeightStore gguf_weight_store(std::shared_ptr<const GgufPair> pair, const ModelConfig& config,
                              GgufLoadStats* stats = nullptr, const GgufPacking& packing = {});

}  // namespace qvl
