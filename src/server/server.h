// `qvl serve`: an OpenAI-compatible HTTP server around one qvl::Engine.
//
// Endpoints: POST /v1/chat/completions, GET /v1/models, GET /props (defaults for clients:
// sampling, image token budgets, context length), POST /tokenize, GET /health, GET /metrics,
// POST /v1/media/preview (media_preview.h), and the embedded web page at / (web_assets.h). The
// model loads on a background thread; /health says 503 "loading" until it is ready and never
// touches the model. See chat_request.h for the accepted request fields and the image `detail`
// budgets.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "qvl/engine.h"
#include "server/admission.h"
#include "server/chat_request.h"
#include "server/connection_watch.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/remote_image.h"

namespace qvl::server {

struct ServerOptions {
  EngineOptions engine;
  std::string host = "127.0.0.1";
  int port = 8080;                       // 0 = any free port (see Server::bind)
  std::string model_alias;               // served model id; default the model folder name
  int parallel = 8;                      // requests generating at once (one batch)
  int queue = 8;                         // requests waiting for a slot; more get 429
  double request_timeout_seconds = 600;  // deadline from receipt to the last token
  double shutdown_grace_seconds = 20;    // SIGTERM: time in-flight work gets to finish
  std::string api_key;                   // empty = open
  std::string cors_origin;               // empty = no CORS headers
  size_t max_body_bytes = 32u << 20;
  int read_timeout_seconds = 10;   // whole header section; longest pause within a body
  int write_timeout_seconds = 10;  // a client must keep reading
  int http_threads = 0;            // blocking handlers at once; 0 = parallel + queue + 8
  int max_connections = 1024;      // open connections; more are answered 503 and closed
  int max_connections_per_ip = 0;  // per client address; 0 = no cap
  double min_body_bytes_per_second = 16 * 1024;  // after the first read_timeout_seconds
  RequestLimits limits;
  RemoteFetchOptions remote;
};

using EngineLoader = std::function<std::unique_ptr<Engine>(const EngineOptions&)>;

class Server {
 public:
  // `loader` defaults to Engine::load; tests pass a fake.
  explicit Server(ServerOptions options, EngineLoader loader = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening socket and returns the port (the chosen one when options.port is 0).
  // Throws qvl::Error if the address is unavailable.
  int bind();
  // Starts serving and loading the model, both in the background. Call after bind().
  void start();

  enum class State { kLoading, kReady, kFailed, kDraining };
  State state() const { return state_.load(); }
  std::string load_error() const;

  // Graceful stop: no new connections or requests, in-flight work gets the grace period to
  // finish and is then cancelled, then everything is joined. Idempotent.
  void shutdown();

 private:
  struct ChatContext;

  HttpApp make_app();
  std::optional<HttpResponse> on_head(const HttpRequest& req);
  void route(const HttpRequest& req, HttpResponse& res);
  void add_common_headers(const HttpRequest& req, HttpResponse& res) const;
  void load_model();
  Engine* ready_engine();
  // The engine, or nullptr once a 503 (the model is still loading, Retry-After) has been sent.
  Engine* ready_engine_or_503(HttpResponse& res);
  // A 200 whose body is a server-sent event stream (no caching, no proxy buffering).
  static void begin_event_stream(HttpResponse& res);
  void handle_health(HttpResponse& res);
  void handle_models(HttpResponse& res);
  void handle_props(HttpResponse& res);
  void handle_tokenize(const HttpRequest& req, HttpResponse& res);
  void handle_metrics(HttpResponse& res);
  void handle_chat(const HttpRequest& req, HttpResponse& res);
  void handle_media_preview(const HttpRequest& req, HttpResponse& res);
  void finish_chat(const std::shared_ptr<ChatContext>& context, HttpResponse& res);
  void stream_chat(const std::shared_ptr<ChatContext>& context, HttpResponse& res);
  // "document_mode": "per_page" (chat_pages.cpp): one choice per page.
  void finish_pages(const std::shared_ptr<ChatContext>& context, HttpResponse& res);
  void stream_pages(const std::shared_ptr<ChatContext>& context, HttpResponse& res);
  void record_chat_end(ChatContext& context, int status);
  std::string model_id() const;

  ServerOptions options_;
  EngineLoader loader_;
  std::unique_ptr<HttpServer> http_;
  ListeningSocket listening_;
  std::unique_ptr<Engine> engine_;
  std::atomic<State> state_{State::kLoading};
  std::atomic<bool> abandon_queue_{false};  // shutdown grace over: queued requests give up
  mutable std::mutex load_mutex_;
  std::string load_error_;
  Admission admission_;
  ConnectionWatch watch_;
  Metrics metrics_;
  int64_t started_at_ = 0;
  std::thread load_thread_;
  std::once_flag shutdown_once_;
};

// Writes `error` as the response (status, OpenAI error body).
void send_error(HttpResponse& res, const class ApiError& error);

}  // namespace qvl::server
