// `qvl gen-model`: a Hugging Face style Qwen3-VL folder with random bf16 weights, for tests and
// full-size benchmarks without downloading anything.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "engine/model_quantizer.h"

namespace qvl::cli {

void add_gen_model_command(CLI::App& app);

// Writes config.json, generation/preprocessor configs, model.safetensors and copies the
// tokenizer files (tokenizer.json, tokenizer_config.json, chat_template.json) from
// tokenizer_dir. preset: one of model_preset_names() (model/model_presets.h).
void generate_model(const std::string& preset, const std::string& tokenizer_dir,
                    const std::string& out_dir, uint64_t seed);

// The same model as a pre-packed file of `quant` (bf16, q8 or q4) written directly: equal to
// `qvl quantize` on generate_model's folder, without the folder.
QuantizeSummary generate_packed_model(const std::string& preset, const std::string& tokenizer_dir,
                                      const std::string& quant, const std::string& out_path,
                                      uint64_t seed);

}  // namespace qvl::cli
