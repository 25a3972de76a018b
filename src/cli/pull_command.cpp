#include "cli/pull_command.h"

#include <iostream>
#include <memory>

#include "base/error.h"
#include "hub/download_progress.h"
#include "hub/model_pull.h"

namespace qvl::cli {
namespace {

struct PullFlags {
  std::string model;
  std::string endpoint;
  std::string cache_dir;
  std::string quant;
  std::string mmproj_quant;
  bool quiet = false;
};

void run_pull(const PullFlags& flags) {
  auto id = hub::parse_hub_model_id(flags.model);
  if (!id) {
    fail(ErrorCode::kInvalidArgument, "'" + flags.model +
                                          "' is not a hub id; expected Org/Name, "
                                          "Org/Name@revision or Org/Name:QUANT (GGUF)");
  }
  if (!flags.quant.empty()) {
    if (!id->quant.empty() && id->quant != flags.quant) {
      fail(ErrorCode::kInvalidArgument, "'" + flags.model + "' names " + id->quant +
                                            " and --quant " + flags.quant + ": give one");
    }
    id->quant = flags.quant;
  }
  hub::ResolveOptions options;
  options.mmproj_quant = flags.mmproj_quant;
  options.endpoint = flags.endpoint;
  options.cache_dir = flags.cache_dir;
  options.show_progress = !flags.quiet;
  const hub::PullResult result = hub::pull_model(*id, options);
  if (!flags.quiet) {
    if (result.files_fetched == 0) {
      std::cerr << id->repo << "@" << id->revision << " is up to date (commit "
                << result.commit.substr(0, 10) << ", " << result.files_total
                << " files, nothing downloaded)\n";
    } else {
      std::cerr << "fetched " << result.files_fetched << " of " << result.files_total << " files ("
                << hub::DownloadProgress::format_bytes(static_cast<double>(result.bytes_fetched))
                << ")\n";
    }
  }
  if (!result.mmproj_path.empty() && !flags.quiet) {
    std::cerr << "GGUF pair: -m " << result.model_path << " --mmproj " << result.mmproj_path
              << " (or -m " << flags.model << ")\n";
  }
  std::cout << result.model_path << "\n";  // what to pass to -m, for scripts
}

}  // namespace

void add_pull_command(CLI::App& app) {
  auto flags = std::make_shared<PullFlags>();
  CLI::App* pull = app.add_subcommand(
      "pull",
      "Download a model from the Hugging Face hub into its cache (only the files qvl "
      "needs; of a GGUF repository one language model and one vision projector). Uses "
      "HF_ENDPOINT, HF_TOKEN / the token file, HF_HUB_CACHE / HF_HOME.");
  pull->add_option("model", flags->model, "Hub id Org/Name[:QUANT][@revision]")->required();
  pull->add_option("--quant", flags->quant,
                   "GGUF repositories: the language model's quantization, e.g. Q4_K_M, Q8_0, "
                   "F16 (default: the only one, else Q8_0, Q4_K_M, F16, BF16)");
  pull->add_option("--mmproj-quant", flags->mmproj_quant,
                   "GGUF repositories: the vision projector's quantization (default: the only "
                   "one, else F16, BF16, Q8_0, F32)");
  pull->add_option("--endpoint", flags->endpoint,
                   "Hub URL (default $HF_ENDPOINT or the public hub)");
  pull->add_option("--cache-dir", flags->cache_dir, "Cache folder (default the HF hub cache)");
  pull->add_flag("-q,--quiet", flags->quiet, "Print only the snapshot folder");
  pull->callback([flags] {
    try {
      run_pull(*flags);
    } catch (const Error& error) {
      std::cerr << "qvl pull: " << error.what() << "\n";
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace qvl::cli
