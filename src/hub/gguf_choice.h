// Which GGUF pair of a repository or folder to use: GGUF repositories (Qwen's
// Qwen3-VL-*-GGUF, community quantizations) hold one language model per quantization and one
// or more vision projectors (mmproj-*.gguf); qvl needs one of each.
#pragma once

#include <string>
#include <vector>

namespace qvl::hub {

struct GgufChoice {
  std::string text;    // the language model's file name, as listed
  std::string mmproj;  // the vision projector's
};

// True for "*.gguf" (any case).
bool is_gguf_name(const std::string& name);
// True for a vision projector: a GGUF file whose base name starts with "mmproj" (any case), as
// llama.cpp's converter and every published repository name them.
bool is_mmproj_name(const std::string& name);
// The quantization a GGUF file name ends with: "Q4_K_M" for "Qwen3VL-2B-Instruct-Q4_K_M.gguf"
// (the part after the last '-' or '.' of the stem); "" when the stem has neither.
std::string gguf_quant_tag(const std::string& name);

// Chooses from `files` (names as a repository lists them; other files are ignored). `quant`
// picks the language model whose name ends with that tag (any case; "" = the only one, else
// Q8_0, which qvl runs losslessly as its default q8, then Q4_K_M, F16, BF16); `mmproj_quant`
// the projector likewise ("" = the only one, else F16, BF16, Q8_0, F32). Sharded files
// (-00001-of-00003) are not loadable and are refused. Throws Error(kNotFound) naming `where`
// and what it has when nothing fits, kInvalidArgument when the choice is ambiguous.
GgufChoice choose_gguf_pair(const std::vector<std::string>& files, const std::string& quant,
                            const std::string& mmproj_quant, const std::string& where);

}  // namespace qvl::hub
