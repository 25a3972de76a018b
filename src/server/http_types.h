// The request and response the HTTP layer (http_server.h) hands to the application's handlers.
// Independent of the HTTP library underneath.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qvl::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// Case-insensitive ASCII comparison (header names, content codings).
bool ascii_iequals(std::string_view a, std::string_view b);

struct HttpRequest {
  std::string method;   // "GET", "POST", ...
  std::string path;     // without the query string
  std::string version;  // "HTTP/1.1"
  HttpHeaders headers;  // as received, in order, duplicates kept
  std::string body;     // complete and within the body limit when a handler sees it
  std::string remote_addr;
  int socket_fd = -1;  // for disconnect polling only; never read or written by handlers

  // The first value of header `name`, or "" when absent.
  std::string get_header_value(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

// Where a streamed response body goes. write() blocks while the client is slow to read and
// returns false once the client is gone (or stopped reading for the write timeout).
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  virtual bool write(std::string_view data) = 0;
};

struct HttpResponse {
  int status = 200;
  HttpHeaders headers;
  std::string body;
  // Used instead of `body` when set: data that outlives the server (the embedded web assets).
  std::string_view static_body;
  bool has_static_body = false;
  // A body produced while it is sent (chunked). Runs on a worker thread after the headers are
  // out; returns the status to record in the metrics (200, or 499 when the client cut it).
  std::function<int(StreamSink&)> stream;

  void set_header(std::string name, std::string value);
  void set_content(std::string content, std::string content_type);
  void set_static_content(std::string_view content, std::string content_type);
  std::string get_header_value(std::string_view name) const;
};

}  // namespace qvl::server
