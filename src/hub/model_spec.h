// Hub model ids as written on the command line: "Org/Name" or "Org/Name@revision".
#pragma once

#include <optional>
#include <string>

namespace qvl::hub {

inline constexpr const char* kDefaultRevision = "main";

struct HubModelId {
  std::string repo;      // "Org/Name"
  std::string revision;  // branch, tag or 40-hex commit; "main" when not given
  // A GGUF repository's quantization to use ("Q4_K_M"), as llama.cpp's -hf takes it after a
  // colon; empty = the default choice (hub/gguf_choice.h).
  std::string quant{};
};

// Parses "Org/Name[:QUANT][@revision]" (or "Org/Name@revision:QUANT"); returns nullopt when
// `spec` is not shaped like a hub id (so the caller can report it as a missing local path
// instead).
std::optional<HubModelId> parse_hub_model_id(const std::string& spec);

// A full 40-character lowercase hex git commit sha.
bool is_commit_hash(const std::string& revision);

// A path relative to a repository root that is safe to join under a folder: no absolute path,
// no "..", no empty or "." components, no backslashes or control characters.
bool is_safe_repo_path(const std::string& path);

// Percent-encodes everything except unreserved characters; with keep_slash, '/' stays (file
// paths inside URLs), without it '/' becomes %2F (revisions such as "refs/pr/1").
std::string url_encode(const std::string& text, bool keep_slash);

}  // namespace qvl::hub
