#include "hub/hub_env.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace qvl::hub {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

std::string trim(std::string text) {
  const auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!text.empty() && is_space(text.back())) text.pop_back();
  size_t start = 0;
  while (start < text.size() && is_space(text[start])) ++start;
  return text.substr(start);
}

std::string expand_home(const std::string& path) {
  if (path.size() >= 1 && path[0] == '~' && (path.size() == 1 || path[1] == '/')) {
    return env("HOME") + path.substr(1);
  }
  return path;
}

}  // namespace

std::string endpoint_from_env() {
  std::string endpoint = trim(env("HF_ENDPOINT"));
  if (endpoint.empty()) endpoint = kDefaultEndpoint;
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  return endpoint;
}

std::string hf_home_from_env() {
  if (const std::string home = env("HF_HOME"); !home.empty()) return expand_home(home);
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) {
    return expand_home(xdg) + "/huggingface";
  }
  return expand_home("~/.cache/huggingface");
}

std::string cache_dir_from_env() {
  if (const std::string dir = env("HF_HUB_CACHE"); !dir.empty()) return expand_home(dir);
  if (const std::string dir = env("HUGGINGFACE_HUB_CACHE"); !dir.empty()) return expand_home(dir);
  return hf_home_from_env() + "/hub";
}

std::string token_path_from_env() {
  if (const std::string path = env("HF_TOKEN_PATH"); !path.empty()) return expand_home(path);
  return hf_home_from_env() + "/token";
}

std::string token_from_env() {
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
    if (std::string token = trim(env(name)); !token.empty()) return token;
  }
  std::ifstream file(token_path_from_env());
  std::string line;
  if (file && std::getline(file, line)) return trim(line);
  return {};
}

bool offline_from_env() {
  std::string value = trim(env("HF_HUB_OFFLINE"));
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return value == "1" || value == "true" || value == "yes" || value == "on";
}

}  // namespace qvl::hub
