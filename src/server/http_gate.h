// Checks on a request's head (request line and headers) made before any of its body is read:
// limits on headers, unambiguous framing (no request smuggling behind a proxy), no compressed
// bodies, and a declared body within the limit. libmicrohttpd parses the bytes; this decides
// what it let through, so every refusal here happens before a body byte is accepted (and before
// `Expect: 100-continue` is granted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "server/http_types.h"

namespace qvl::server {

struct HttpLimits {
  size_t max_body_bytes = 32u << 20;
  size_t max_header_bytes = 32u << 10;  // names + values + separators of all header lines
  size_t max_headers = 100;
};

struct GateVerdict {
  int status = 0;  // 0 = go on; else refuse with this status and close the connection
  std::string message;
  std::string code;
  bool chunked = false;                    // the body is chunked (length unknown until read)
  std::optional<uint64_t> content_length;  // the declared length, when there is one
};

GateVerdict check_request_head(const HttpRequest& head, const HttpLimits& limits);

// "Payload Too Large" for 413, ... (the reason phrase of a status we send).
const char* http_reason_phrase(int status);

}  // namespace qvl::server
