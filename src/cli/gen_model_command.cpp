#include "cli/gen_model_command.h"

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
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

void generate_model(const std::string& preset_name, const std::string& tokenizer_dir,
                    const std::string& out_dir, uint64_t seed) {
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
  write_safetensors(out_dir + "/model.safetensors", preset_tensors(preset_name, seed));
}

void add_gen_model_command(CLI::App& app) {
  struct Options {
    std::string preset = "tiny", tokenizer, out;
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
  cmd->add_option("--out", o->out, "Output folder")->required();
  cmd->add_option("--seed", o->seed, "Random seed");
  cmd->callback([o] {
    generate_model(o->preset, o->tokenizer, o->out, o->seed);
    QVL_LOG(kInfo) << "wrote " << o->preset << " model to " << o->out;
  });
}

}  // namespace qvl::cli
