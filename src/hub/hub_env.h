// Where the hub and its cache are, following huggingface_hub's environment variables so that a
// model fetched by Python tools is found here and the other way round.
#pragma once

#include <string>

namespace qvl::hub {

inline constexpr const char* kDefaultEndpoint = "https://huggingface.co";

// $HF_ENDPOINT without a trailing slash, else the public hub.
std::string endpoint_from_env();
// $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE (legacy), else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::string cache_dir_from_env();
// $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface.
std::string hf_home_from_env();
// $HF_TOKEN_PATH, else $HF_HOME/token.
std::string token_path_from_env();
// $HF_TOKEN (or the legacy $HUGGING_FACE_HUB_TOKEN), else the first line of the token file;
// empty when there is none.
std::string token_from_env();
// HF_HUB_OFFLINE set to 1/true/yes/on (case-insensitive).
bool offline_from_env();

}  // namespace qvl::hub
