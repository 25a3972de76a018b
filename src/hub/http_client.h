// A small blocking HTTP(S) client over libcurl, just what the hub client needs: GET/HEAD with a
// bearer token, optional redirect following, Range requests, and streaming bodies to a sink.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace qvl::hub {

// Why a request produced no complete HTTP response.
enum class TransportFailure {
  kNone,           // a full response arrived (any status code)
  kCannotConnect,  // DNS, refused connection, TLS handshake: the host is unreachable
  kInterrupted,    // the connection broke or stalled mid-body (worth resuming)
  kSinkFailed,     // the body sink refused the data (e.g. disk full); see the sink's exception
  kOther,
};

struct HttpRequest {
  std::string method = "GET";  // "GET" or "HEAD"
  std::string url;
  std::string bearer_token;  // sent as Authorization; curl drops it on redirects to other hosts
  bool follow_redirects = true;
  int64_t range_start = -1;  // >= 0: ask for bytes range_start.. (HTTP Range)
  // Receives the body of a 2xx response with its status (200, or 206 for a range); return false
  // to abort. Without a sink the body is kept in HttpResponse::body, up to max_body bytes (beyond
  // that the request fails).
  std::function<bool(long status, const char* data, size_t size)> sink;
  size_t max_body = size_t{32} << 20;
  long connect_timeout_seconds = 15;
  long stall_timeout_seconds = 60;  // abort when under 1 byte/s for this long
};

struct HttpResponse {
  TransportFailure failure = TransportFailure::kNone;
  std::string error;  // libcurl's description when failure != kNone
  long status = 0;
  std::map<std::string, std::string> headers;  // of the last response, names lowercased
  std::string body;                            // non-2xx bodies, or everything without a sink
  std::string effective_url;

  std::string header(const std::string& lowercase_name) const {
    const auto it = headers.find(lowercase_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// Performs one request (following redirects when asked). Never throws for network or HTTP
// errors; rethrows an exception thrown by the sink.
HttpResponse http_request(const HttpRequest& request);

}  // namespace qvl::hub
