// The HTTP/1.1 transport of `qvl serve`, on libmicrohttpd: one event thread (epoll) reads and
// writes every connection, so idle or slow sockets cost no thread; handlers that may block
// (generation, tokenizing) run on worker threads while their connection is parked (suspended).
// Every limit holds while reading: header size and count, framing (http_gate.h), the body
// limit on the bytes actually received (chunked included), deadlines and connection caps
// (http_connections.h). No byte ranges, no compression of request bodies.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/http_connections.h"
#include "server/http_gate.h"
#include "server/http_listener.h"
#include "server/http_types.h"

namespace qvl::server {

struct HttpServerOptions {
  HttpLimits limits;
  ConnectionLimits connections;
  double write_timeout_seconds = 10;  // a client that stops reading a response is dropped
  int max_workers = 64;               // blocking handlers at once; more get 503
};

// What the application plugs in. All callbacks may run on any thread.
struct HttpApp {
  // Called with the head of a request (no body yet). A response refuses the request before any
  // body is read (authentication, unknown route, CORS preflight); nullopt goes on.
  std::function<std::optional<HttpResponse>(const HttpRequest&)> on_head;
  // True when handle() may block: it then runs on a worker thread.
  std::function<bool(const HttpRequest&)> blocking;
  std::function<void(const HttpRequest&, HttpResponse&)> handle;
  // Once per answered request, with the status sent (a stream's: when it ended, 499 if cut).
  std::function<void(const std::string& path, int status)> done;
  // The JSON body of an error the transport answers by itself (413, 431, 400, 408, 503, ...).
  std::function<std::string(int status, const std::string& message, const std::string& code)>
      error_body;
  // While true, responses carry Connection: close.
  std::function<bool()> draining;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpApp app);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Starts the event thread on an already listening socket (taken over).
  void start(ListeningSocket socket);
  // Closes the listening socket and every connection that is idle or still sending a request;
  // requests being handled go on.
  void stop_accepting();
  // Waits up to `linger` for the responses in flight, then cuts every connection, waits for
  // the worker threads and stops the event thread. Idempotent.
  void stop(std::chrono::milliseconds linger);

  size_t open_connections();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace qvl::server
