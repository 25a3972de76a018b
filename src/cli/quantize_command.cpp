#include "cli/quantize_command.h"

#include <memory>
#include <optional>

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "engine/loaded_model.h"
#include "engine/model_quantizer.h"
#include "hub/model_pull.h"
#include "model/packed_file.h"
#include "model/weight_types.h"
#include "ops/packed_matrix.h"

namespace qvl::cli {
namespace {

struct QuantizeOptions {
  std::string model;
  std::string out;
  std::string quant = "q8";
  std::string vision_quant;
  std::string mmproj;
  int threads = 0;
  bool offline = false;
};

void quantize(const QuantizeOptions& o) {
  if (o.threads > 0) ThreadPool::set_global_threads(o.threads);
  hub::ResolveOptions resolve;
  resolve.offline = o.offline;
  std::string mmproj = o.mmproj;
  const std::string path = hub::resolve_model(o.model, resolve, mmproj.empty() ? &mmproj : nullptr);
  // A GGUF pair: a language model file (with --mmproj or the one projector beside it), or a
  // folder holding one pair and no config.json.
  std::optional<GgufPairPaths> gguf;
  if (is_gguf_file(path)) {
    gguf = GgufPairPaths{path, mmproj};
  } else if (!is_model_file(path) && !file_exists(path + "/config.json")) {
    gguf = find_gguf_pair(path);
  }
  if (!gguf && !mmproj.empty()) {
    fail(ErrorCode::kInvalidArgument, "--mmproj is for GGUF models; '" + path + "' is not one");
  }
  if (!gguf && is_model_file(path)) {
    fail(ErrorCode::kInvalidArgument, "'" + path +
                                          "' is already a pre-packed file; quantize reads a "
                                          "model folder, a GGUF pair or a hub id");
  }
  const Timer timer;
  const QuantizeSummary s =
      gguf ? quantize_gguf_pair(gguf->text, gguf->mmproj, o.quant, o.out, o.vision_quant)
           : quantize_model_folder(path, o.quant, o.out, o.vision_quant);
  QVL_LOG(kInfo) << "wrote " << o.out << ": " << o.quant << " (vision "
                 << ops::quant_type_name(weight_types_for(o.quant, "", o.vision_quant).vision)
                 << "), " << s.packed_matrices << " packed matrices, " << s.stored_tensors
                 << " tensors as stored, " << s.embedded_files << " embedded files, "
                 << s.file_bytes / (1 << 20) << " MiB in " << static_cast<int>(timer.millis())
                 << " ms";
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Write a pre-packed model file (weights in kernel layout, configs and tokenizer inside) "
      "that loads in place by mmap: use it as -m FILE");
  cmd->add_option("-m,--model", o->model,
                  "Model folder, GGUF language model (with --mmproj, or the one projector beside "
                  "it), folder of one GGUF pair, or hub id Org/Name[:QUANT][@revision]")
      ->required();
  cmd->add_option("--mmproj", o->mmproj, "GGUF vision projector (mmproj-*.gguf) of a GGUF model");
  cmd->add_option("-o,--out", o->out, "The file to write")->required();
  cmd->add_option("--quant", o->quant, "Weights: bf16, q8 or q4 (as run --quant does)")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "q8", "q4"}));
  cmd->add_option(
         "--vision-quant", o->vision_quant,
         "Vision tower's big matrices: bf16 or q8 (default: q8 with --quant q4, else bf16)")
      ->check(CLI::IsMember({"bf16", "q8"}));
  cmd->add_option("--threads", o->threads, "Threads (default: physical cores)");
  cmd->add_flag("--offline", o->offline, "Never download (also HF_HUB_OFFLINE=1)");
  cmd->callback([o] { quantize(*o); });
}

}  // namespace qvl::cli
