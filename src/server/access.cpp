#include "server/access.h"

#include <cctype>

namespace qvl::server {

bool path_needs_api_key(std::string_view path) {
  return path.substr(0, 4) == "/v1/" || path == "/v1" || path == "/tokenize" || path == "/props";
}

bool authorization_allows(std::string_view authorization_header, std::string_view api_key) {
  if (api_key.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization_header.size() < kBearer.size()) return false;
  for (size_t i = 0; i < kBearer.size(); ++i) {
    // The scheme is case-insensitive (RFC 7235).
    if (std::tolower(static_cast<unsigned char>(authorization_header[i])) !=
        std::tolower(static_cast<unsigned char>(kBearer[i]))) {
      return false;
    }
  }
  const std::string_view token = authorization_header.substr(kBearer.size());
  if (token.size() != api_key.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < token.size(); ++i) {
    difference |= static_cast<unsigned char>(token[i] ^ api_key[i]);
  }
  return difference == 0;
}

std::vector<std::pair<std::string, std::string>> cors_headers(std::string_view allowed_origin,
                                                              std::string_view origin,
                                                              bool preflight) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (allowed_origin.empty() || origin.empty()) return headers;
  if (allowed_origin == "*") {
    headers.emplace_back("Access-Control-Allow-Origin", "*");
  } else if (origin == allowed_origin) {
    headers.emplace_back("Access-Control-Allow-Origin", std::string(origin));
    headers.emplace_back("Vary", "Origin");
  } else {
    return headers;
  }
  if (preflight) {
    headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    headers.emplace_back("Access-Control-Allow-Headers", "Authorization, Content-Type");
    headers.emplace_back("Access-Control-Max-Age", "600");
  }
  return headers;
}

}  // namespace qvl::server
