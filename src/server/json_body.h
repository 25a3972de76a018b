// Parsing a request body whose bulk is a few long strings (base64 images in data URIs).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace qvl::server {

// The same value (and, for invalid JSON, the same json::exception) as Json::parse(body), for
// nlohmann::json and nlohmann::ordered_json (structured output keeps the client's key order). Long
// string values of plain printable ASCII (no escapes) are lifted out of the text before the parse
// and copied back into the value after it: nlohmann's lexer builds a string a byte at a time
// (~10 ms for an 800 KB data URI), a copy of it takes ~0.1 ms.
template <typename Json = nlohmann::json>
Json parse_json_lifting_long_strings(std::string_view body);

// Strings of at least this many bytes are lifted.
inline constexpr size_t kLiftedStringBytes = 16 * 1024;

}  // namespace qvl::server
