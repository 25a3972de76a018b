// Getting a model onto disk: `qvl pull` and the -m resolution used by every subcommand.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "hub/model_spec.h"

namespace qvl::hub {

inline constexpr const char* kDefaultModel = "Qwen/Qwen3-VL-2B-Instruct";

struct ResolveOptions {
  bool offline = false;       // never touch the network (HF_HUB_OFFLINE=1 also forces this)
  bool show_progress = true;  // progress lines on progress_out
  std::string endpoint;       // empty: $HF_ENDPOINT, else https://huggingface.co
  std::string cache_dir;      // empty: HF_HUB_CACHE / HF_HOME/hub / ~/.cache/huggingface/hub
  std::string token;          // empty: $HF_TOKEN, else the token file
  int max_attempts = 3;       // per file; a dropped connection is resumed with a Range request
  std::ostream* progress_out = nullptr;  // default std::cerr
  bool progress_bar = false;             // redrawn bar; ignored unless progress_out is a terminal
  // A GGUF repository's vision projector quantization ("" = the default, hub/gguf_choice.h);
  // the language model's comes with the id (Org/Name:QUANT).
  std::string mmproj_quant;
};

// Fills the empty fields of `options` from the environment (endpoint, cache, token, offline);
// progress_bar becomes true when progress goes to std::cerr and stderr is a terminal.
ResolveOptions with_environment_defaults(ResolveOptions options);

struct PullResult {
  std::string snapshot_dir;  // <cache>/models--Org--Name/snapshots/<commit>
  // What to load: the snapshot folder, or for a GGUF repository the chosen language model file
  // and its vision projector (mmproj_path) in it.
  std::string model_path;
  std::string mmproj_path;
  std::string commit;
  int files_total = 0;    // files qvl needs from the repository
  int files_fetched = 0;  // of which downloaded now (the rest were in the cache)
  int64_t bytes_fetched = 0;
};

// Downloads the files qvl needs for `id` into the HF cache (only those missing), links the
// snapshot and updates refs/<revision>. Always asks the hub which commit the revision is at.
PullResult pull_model(const HubModelId& id, const ResolveOptions& options);

// Resolves -m: an existing local folder or file is returned as is; a hub id Org/Name[@rev]
// becomes its snapshot folder in the HF cache, or for a GGUF repository (Org/Name[:QUANT]) the
// chosen language model file there, with its vision projector's path put in *mmproj (when
// given). A complete cached snapshot is used without any network request (`qvl pull` updates
// it); otherwise the model is pulled unless offline.
std::string resolve_model(const std::string& spec, const ResolveOptions& options,
                          std::string* mmproj = nullptr);

}  // namespace qvl::hub
