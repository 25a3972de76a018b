// The tokenizer stored in a GGUF language model ("tokenizer.ggml.*": model gpt2, pre-tokenizer
// qwen2, the token list with their types, the merges) written out as the Hugging Face
// tokenizer.json that the qvl tokenizer reads, so a GGUF pair needs no other file. NORMAL tokens
// form the BPE vocabulary, CONTROL and USER_DEFINED ones the added tokens (special and not),
// UNUSED padding entries are left out, as in Qwen's own tokenizer.json.
#pragma once

#include <string>

#include "model/gguf_file.h"

namespace qvl {

// Throws Error(kUnsupported) for another tokenizer model or pre-tokenizer, kCorrupt for
// inconsistent arrays.
std::string gguf_tokenizer_json(const GgufFile& text);

}  // namespace qvl
