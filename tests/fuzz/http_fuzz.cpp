// libFuzzer target: any bytes as what a client sends on one connection to the server's HTTP
// layer (libmicrohttpd under our gate, limits, body reading and responses; http_server.h).
// The layer runs in-process on loopback with a small application. Properties: nothing
// crashes or leaks; a handler only ever sees a request that passed the gate (unambiguous
// framing, bounded headers, body within the limit); the connection ends once the client has
// sent everything; every answer starts with an HTTP/1.1 status line.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "server/http_server.h"

namespace {

using qvl::server::HttpRequest;
using qvl::server::HttpResponse;

constexpr size_t kMaxBody = 4096;

bool framing_is_clean(const HttpRequest& request) {
  int lengths = 0, encodings = 0;
  for (const auto& [name, value] : request.headers) {
    if (qvl::server::ascii_iequals(name, "Content-Length")) ++lengths;
    if (qvl::server::ascii_iequals(name, "Transfer-Encoding")) ++encodings;
  }
  return request.headers.size() <= 100 && !(lengths > 0 && encodings > 0) && encodings <= 1;
}

qvl::server::HttpServer& server(int& port) {
  static int bound_port = 0;
  static qvl::server::HttpServer* instance = [] {
    qvl::server::HttpServerOptions options;
    options.limits.max_body_bytes = kMaxBody;
    // Short deadlines: a client that half-closes after a complete request is let go at the
    // header deadline of the next one, and each input waits for that.
    options.connections.header_timeout_seconds = 0.05;
    options.connections.body_stall_seconds = 0.05;
    options.max_workers = 4;
    qvl::server::HttpApp app;
    app.on_head = [](const HttpRequest& request) -> std::optional<HttpResponse> {
      if (!framing_is_clean(request)) __builtin_trap();
      if (request.path == "/refuse") {
        HttpResponse response;
        response.status = 401;
        response.set_content("{}", "application/json");
        return response;
      }
      return std::nullopt;
    };
    app.blocking = [](const HttpRequest& request) { return request.path == "/slow"; };
    app.handle = [](const HttpRequest& request, HttpResponse& response) {
      if (!framing_is_clean(request) || request.body.size() > kMaxBody) __builtin_trap();
      if (request.path == "/stream") {
        response.stream = [](qvl::server::StreamSink& sink) {
          return sink.write("data: 1\n\n") && sink.write("data: 2\n\n") ? 200 : 499;
        };
        return;
      }
      response.set_content(std::to_string(request.body.size()), "text/plain");
    };
    app.done = [](const std::string&, int) {};
    app.error_body = [](int status, const std::string&, const std::string&) {
      return "{\"status\":" + std::to_string(status) + "}";
    };
    app.draining = [] { return false; };
    auto* created = new qvl::server::HttpServer(options, app);
    const auto socket = qvl::server::open_listening_socket("127.0.0.1", 0, 64);
    bound_port = socket.port;
    created->start(socket);
    return created;
  }();
  port = bound_port;
  return *instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int port = 0;
  server(port);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // libFuzzer's -timeout watchdog is a SIGALRM: any call here may return EINTR, which is no
  // verdict about the server, so each is retried (connect then completes by itself).
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 && errno != EINTR) {
    __builtin_trap();
  }
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the server closed early (a refusal): fine
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string answer;
  char buffer[4096];
  // The server must end the connection on its own once the client is done sending.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) __builtin_trap();
    pollfd entry{fd, POLLIN, 0};
    const int ready = poll(&entry, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) __builtin_trap();
    if (ready == 0) continue;  // the deadline check above decides
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (answer.size() < (1u << 20)) answer.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  if (!answer.empty() && answer.rfind("HTTP/1.", 0) != 0) __builtin_trap();
  return 0;
}
