// Model configuration of a Qwen3-VL GGUF pair, read from its metadata: the language model's
// "qwen3vl.*" keys and the vision projector's "clip.*" keys (as llama.cpp's converter writes
// them), plus the special token ids from the vocabulary ("tokenizer.ggml.tokens").
#pragma once

#include <array>

#include "model/config.h"
#include "model/gguf_file.h"

namespace qvl {

// Throws Error(kUnsupported) for another architecture or projector, kCorrupt naming the file
// and key for missing or impossible values.
ModelConfig gguf_model_config(const GgufFile& text, const GgufFile& vision);

// eos from tokenizer.ggml.eos_token_id (and <|im_end|> / <|endoftext|> when the vocabulary has
// them, as Qwen's generation_config.json lists both), sampling defaults from general.sampling.*
// when the converter stored them.
GenerationConfig gguf_generation_config(const GgufFile& text);

// The vision projector's pixel normalisation (clip.vision.image_mean / image_std).
struct GgufImageNormalization {
  std::array<float, 3> mean{0.5f, 0.5f, 0.5f};
  std::array<float, 3> std{0.5f, 0.5f, 0.5f};
};
GgufImageNormalization gguf_image_normalization(const GgufFile& vision);

// The file's quantization as llama.cpp names it ("F16", "Q8_0", "Q4_K_M", ...): its
// general.file_type, or, when that is absent or unknown (projectors often lack it), the tensor
// type holding most of the bytes of its matrices.
std::string gguf_file_type(const GgufFile& file);

}  // namespace qvl
