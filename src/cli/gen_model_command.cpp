#include "cli/gen_model_command.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "engine/model_quantizer.h"
#include "model/model_presets.h"
#include "model/safetensors_writer.h"

namespace qvl::cli {
namespace {

using ordered_json = nlohmann::ordered_json;

void write_json(const std::string& path, const ordered_json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) fail(ErrorCode::kIo, "cannot write '" + path + "'");
}

void copy_file(const std::string& from, const std::string& to) {
  std::string data = read_text_file(from);
  // A folder copied without symlinks may hold a one-line file naming the real file instead.
  if (data.size() < 4096 && !data.empty() && data[0] != '{') {
    std::string target = data.substr(0, data.find_first_of("\r\n"));
    if (!target.empty() && target[0] != '/')
      target = from.substr(0, from.find_last_of('/') + 1) + target;
    data = read_text_file(target);
  }
  std::ofstream out(to, std::ios::binary);
  out << data;
  if (!out) fail(ErrorCode::kIo, "cannot write '" + to + "'");
}

}  // namespace

namespace {

// Everything of a model folder but its weights.
void write_model_files(const std::string& preset_name, const std::string& tokenizer_dir,
                       const std::string& out_dir) {
  if (!file_exists(tokenizer_dir + "/tokenizer.json")) {
    fail(ErrorCode::kNotFound, "no tokenizer.json in '" + tokenizer_dir + "'");
  }
  ::mkdir(out_dir.c_str(), 0755);
  write_json(out_dir + "/config.json", preset_config_json(preset_name));
  write_json(out_dir + "/generation_config.json", {{"bos_token_id", 151643},
                                                   {"do_sample", false},
                                                   {"eos_token_id", {151645, 151643}},
                                                   {"pad_token_id", 151643}});
  write_json(out_dir + "/preprocessor_config.json",
             {{"size", {{"longest_edge", 16777216}, {"shortest_edge", 65536}}},
              {"patch_size", 16},
              {"temporal_patch_size", 2},
              {"merge_size", 2},
              {"image_mean", {0.5, 0.5, 0.5}},
              {"image_std", {0.5, 0.5, 0.5}},
              {"processor_class", "Qwen3VLProcessor"},
              {"image_processor_type", "Qwen2VLImageProcessorFast"}});
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "chat_template.json"}) {
    const std::string src = tokenizer_dir + "/" + f;
    if (file_exists(src)) copy_file(src, out_dir + "/" + f);
  }
}

}  // namespace

void generate_model(const std::string& preset_name, const std::string& tokenizer_dir,
                    const std::string& out_dir, uint64_t seed) {
  write_model_files(preset_name, tokenizer_dir, out_dir);
  write_safetensors(out_dir + "/model.safetensors", preset_tensors(preset_name, seed));
}

QuantizeSummary generate_packed_model(const std::string& preset_name,
                                      const std::string& tokenizer_dir, const std::string& quant,
                                      const std::string& out_path, uint64_t seed) {
  // The files beside the weights go through a folder of their own, as `qvl quantize` reads them.
  const std::string files = out_path + ".files";
  std::filesystem::remove_all(files);
  try {
    write_model_files(preset_name, tokenizer_dir, files);
    const QuantizeSummary s = quantize_generated_model(
        files, preset_tensors(preset_name, seed, ExpertLayout::kPerExpert), quant, out_path);
    std::filesystem::remove_all(files);
    return s;
  } catch (...) {
    std::filesystem::remove_all(files);
    throw;
  }
}

void add_gen_model_command(CLI::App& app) {
  struct Options {
    std::string preset = "tiny", tokenizer, out, quant;
    uint64_t seed = 1234;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("gen-model", "Write a model folder with random weights");
  std::string names;
  for (const std::string& n : model_preset_names()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("--preset", o->preset, "One of: " + names)
      ->check(CLI::IsMember(model_preset_names()));
  cmd->add_option("--tokenizer", o->tokenizer, "Folder with tokenizer.json (and chat template)")
      ->required();
  cmd->add_option("--out", o->out, "Output folder (with --quant: the pre-packed file)")->required();
  cmd->add_option("--seed", o->seed, "Random seed");
  cmd->add_option("--quant", o->quant,
                  "Write a pre-packed file (as `qvl quantize` would) in bf16, q8 or q4 directly, "
                  "without the bf16 folder (30B-A3B: 60 GB)")
      ->check(CLI::IsMember({"bf16", "q8", "q4"}));
  cmd->callback([o] {
    if (o->quant.empty()) {
      generate_model(o->preset, o->tokenizer, o->out, o->seed);
      QVL_LOG(kInfo) << "wrote " << o->preset << " model to " << o->out;
      return;
    }
    const Timer timer;
    const QuantizeSummary s =
        generate_packed_model(o->preset, o->tokenizer, o->quant, o->out, o->seed);
    QVL_LOG(kInfo) << "wrote " << o->preset << " model to " << o->out << ": " << o->quant << ", "
                   << s.packed_matrices << " packed matrices, " << s.file_bytes / (1 << 20)
                   << " MiB in " << static_cast<int>(timer.millis()) << " ms";
  });
}

}  // namespace qvl::cli
