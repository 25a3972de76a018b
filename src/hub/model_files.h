// Which files of a model repository qvl needs, and whether a local snapshot folder has them.
#pragma once

#include <string>
#include <vector>

namespace qvl::hub {

inline constexpr const char* kWeightsFile = "model.safetensors";
inline constexpr const char* kWeightsIndexFile = "model.safetensors.index.json";

// Small files fetched when the repository has them (config.json is required).
const std::vector<std::string>& model_metadata_files();

// The shard file names listed in a safetensors index ("weight_map" values), unique, in order of
// first appearance. Throws kCorrupt when the index is malformed or names an unsafe path.
std::vector<std::string> shards_from_index(const std::string& index_json);

// The files a local model folder is missing before qvl can load it: config.json,
// tokenizer.json, and model.safetensors or the index plus every shard it lists. Empty when
// complete.
std::vector<std::string> missing_model_files(const std::string& folder);

}  // namespace qvl::hub
