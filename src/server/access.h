// Who may call what: the optional API key (Authorization: Bearer) and CORS headers.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qvl::server {

// True for the paths the API key protects: /v1/*, /tokenize and /props. /health, /metrics and
// the web page stay open so load balancers, scrapers and browsers need no secret.
bool path_needs_api_key(std::string_view path);

// Checks an Authorization header value against the key in constant time (for equal lengths).
// An empty `api_key` means no key is configured: everything is allowed.
bool authorization_allows(std::string_view authorization_header, std::string_view api_key);

// CORS response headers for a request from `origin` (may be empty). `allowed_origin` is the
// --cors-origin value: empty = CORS off (no headers), "*" = any origin, else one exact origin.
std::vector<std::pair<std::string, std::string>> cors_headers(std::string_view allowed_origin,
                                                              std::string_view origin,
                                                              bool preflight);

}  // namespace qvl::server
