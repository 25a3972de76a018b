#include "hub/model_files.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.h"
#include "hub/model_spec.h"

namespace qvl::hub {
namespace fs = std::filesystem;

const std::vector<std::string>& model_metadata_files() {
  static const std::vector<std::string> files = {
      "config.json",         "generation_config.json", "preprocessor_config.json",
      "tokenizer.json",      "tokenizer_config.json",  "chat_template.json",
      "chat_template.jinja",
  };
  return files;
}

std::vector<std::string> shards_from_index(const std::string& index_json) {
  const auto json = nlohmann::json::parse(index_json, nullptr, false);
  if (!json.is_object() || !json.contains("weight_map") || !json["weight_map"].is_object()) {
    fail(ErrorCode::kCorrupt, std::string(kWeightsIndexFile) + " has no \"weight_map\" object");
  }
  std::vector<std::string> shards;
  std::set<std::string> seen;
  for (const auto& [tensor, shard] : json["weight_map"].items()) {
    if (!shard.is_string() || !is_safe_repo_path(shard.get<std::string>())) {
      fail(ErrorCode::kCorrupt,
           std::string(kWeightsIndexFile) + ": bad shard name for tensor " + tensor);
    }
    if (seen.insert(shard.get<std::string>()).second) shards.push_back(shard.get<std::string>());
  }
  if (shards.empty())
    fail(ErrorCode::kCorrupt, std::string(kWeightsIndexFile) + " lists no shards");
  return shards;
}

std::vector<std::string> missing_model_files(const std::string& folder) {
  std::vector<std::string> missing;
  std::error_code ec;
  const auto has = [&](const std::string& name) {
    return fs::is_regular_file(fs::path(folder) / name, ec);  // follows the snapshot symlinks
  };
  for (const char* name : {"config.json", "tokenizer.json"}) {
    if (!has(name)) missing.push_back(name);
  }
  if (has(kWeightsFile)) return missing;
  if (!has(kWeightsIndexFile)) {
    missing.push_back(std::string(kWeightsFile) + " (or " + kWeightsIndexFile + ")");
    return missing;
  }
  std::ifstream in(fs::path(folder) / kWeightsIndexFile);
  std::stringstream text;
  text << in.rdbuf();
  try {
    for (const std::string& shard : shards_from_index(text.str())) {
      if (!has(shard)) missing.push_back(shard);
    }
  } catch (const Error&) {
    missing.push_back(std::string(kWeightsIndexFile) + " (unreadable)");
  }
  return missing;
}

}  // namespace qvl::hub
