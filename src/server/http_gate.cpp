#include "server/http_gate.h"

#include <cctype>
#include <string_view>

namespace qvl::server {
namespace {

std::string lower_trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// RFC 9110 token characters (header names).
bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) continue;
    if (std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
  }
  return true;
}

bool has_control_chars(std::string_view value) {
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return true;
  }
  return false;
}

// 1*DIGIT, at most 19 digits (fits uint64).
std::optional<uint64_t> parse_length(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

GateVerdict refuse(int status, std::string message, std::string code) {
  GateVerdict verdict;
  verdict.status = status;
  verdict.message = std::move(message);
  verdict.code = std::move(code);
  return verdict;
}

}  // namespace

GateVerdict check_request_head(const HttpRequest& head, const HttpLimits& limits) {
  if (head.headers.size() > limits.max_headers) {
    return refuse(431,
                  "too many header fields (" + std::to_string(head.headers.size()) +
                      "); this server accepts at most " + std::to_string(limits.max_headers),
                  "headers_too_large");
  }
  size_t header_bytes = 0;
  std::optional<uint64_t> content_length;
  bool has_content_length = false;
  std::string transfer_encoding;
  bool has_transfer_encoding = false;
  for (const auto& [name, value] : head.headers) {
    header_bytes += name.size() + value.size() + 4;
    if (!is_token(name) || has_control_chars(value)) {
      return refuse(400, "malformed header line (a header name must be a token, no spaces)",
                    "bad_http_request");
    }
    if (ascii_iequals(name, "Content-Length")) {
      const auto length = parse_length(value);
      if (!length || (has_content_length && content_length != length)) {
        return refuse(400,
                      "invalid or conflicting Content-Length (one value of digits only is "
                      "allowed)",
                      "bad_http_request");
      }
      has_content_length = true;
      content_length = length;
    } else if (ascii_iequals(name, "Transfer-Encoding")) {
      if (has_transfer_encoding) transfer_encoding += ",";
      transfer_encoding += lower_trimmed(value);
      has_transfer_encoding = true;
    }
  }
  if (header_bytes > limits.max_header_bytes) {
    return refuse(431,
                  "the request's header fields are larger than " +
                      std::to_string(limits.max_header_bytes) + " bytes",
                  "headers_too_large");
  }
  GateVerdict verdict;
  if (has_transfer_encoding) {
    if (has_content_length) {
      return refuse(400, "a request may not have both Content-Length and Transfer-Encoding",
                    "bad_http_request");
    }
    if (head.version != "HTTP/1.1") {
      return refuse(400, "Transfer-Encoding needs HTTP/1.1", "bad_http_request");
    }
    if (transfer_encoding != "chunked") {
      return refuse(501,
                    "unsupported Transfer-Encoding '" + transfer_encoding.substr(0, 64) +
                        "'; only 'chunked' is implemented",
                    "unsupported_transfer_encoding");
    }
    verdict.chunked = true;
  }
  const std::string content_encoding = lower_trimmed(head.get_header_value("Content-Encoding"));
  if (!content_encoding.empty() && content_encoding != "identity") {
    return refuse(415,
                  "compressed request bodies (Content-Encoding '" + content_encoding.substr(0, 64) +
                      "') are not accepted; send the body uncompressed",
                  "unsupported_content_encoding");
  }
  const std::string expect = head.get_header_value("Expect");
  if (head.has_header("Expect") && lower_trimmed(expect) != "100-continue") {
    return refuse(417, "unsupported Expect header; only '100-continue' is known",
                  "expectation_failed");
  }
  if (content_length && *content_length > limits.max_body_bytes) {
    return refuse(413,
                  "request body is larger than the " + std::to_string(limits.max_body_bytes) +
                      "-byte limit (--max-body-mb); send smaller or fewer images",
                  "request_too_large");
  }
  verdict.content_length = content_length;
  return verdict;
}

const char* http_reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Error";
  }
}

}  // namespace qvl::server
