#include "server/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <csignal>
#include <filesystem>

#include "base/log.h"
#include "base/thread_pool.h"
#include "server/access.h"
#include "server/api_error.h"
#include "server/web_assets.h"

namespace qvl::server {

using nlohmann::json;

// Exposes the listening socket so shutdown can stop accepting without also cutting off the
// responses still being streamed (httplib::Server::stop() does both at once).
class Server::HttpServer : public httplib::Server {
 public:
  void stop_accepting() {
    const auto sock = svr_sock_.load();
    if (sock != INVALID_SOCKET) ::shutdown(sock, SHUT_RDWR);
  }
  // Ends idle keep-alive connections once in-flight work is done.
  void end_connections() { svr_sock_.store(INVALID_SOCKET); }
};

namespace {

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// Bounded set of endpoint labels for metrics.
std::string endpoint_label(const std::string& path) {
  for (const char* known :
       {"/v1/chat/completions", "/v1/models", "/props", "/tokenize", "/health", "/metrics", "/"}) {
    if (path == known) return known;
  }
  return "other";
}

ApiError default_error_for(const httplib::Request& req, int status, size_t max_body) {
  switch (status) {
    case 404:
      return ApiError(404, "invalid_request_error",
                      "unknown endpoint " + req.method + " " + req.path.substr(0, 128) +
                          "; this server has POST /v1/chat/completions, GET /v1/models, GET "
                          "/props, POST /tokenize, GET /health, GET /metrics and the web page at /",
                      "", "unknown_url");
    case 413:
      return ApiError(413, "invalid_request_error",
                      "request body is larger than the " + std::to_string(max_body) +
                          "-byte limit (--max-body-mb); send smaller or fewer images",
                      "", "request_too_large");
    case 414:
      return ApiError(414, "invalid_request_error", "request URI is too long", "", "uri_too_long");
    case 400:
      return ApiError(400, "invalid_request_error",
                      "malformed HTTP request, or the body did not arrive completely in time "
                      "(check Content-Length and send the whole body at once)",
                      "", "bad_http_request");
    default:
      return ApiError(status, status >= 500 ? "server_error" : "invalid_request_error",
                      "HTTP error " + std::to_string(status), "", "");
  }
}

}  // namespace

void send_error(httplib::Response& res, const ApiError& error) {
  send_json(res, error.status(), error.to_json());
}

Server::Server(ServerOptions options, EngineLoader loader)
    : options_(std::move(options)),
      loader_(std::move(loader)),
      http_(std::make_unique<HttpServer>()),
      admission_(options_.parallel, options_.queue),
      started_at_(std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count()) {
  if (!loader_) loader_ = [](const EngineOptions& engine) { return Engine::load(engine); };
  options_.limits.max_image_bytes =
      std::min(options_.limits.max_image_bytes, options_.engine.max_image_bytes);
  options_.remote.max_bytes = options_.limits.max_image_bytes;
  install_routes();
}

Server::~Server() {
  shutdown();
}

int Server::bind() {
  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.host);
  } else if (!http_->bind_to_port(options_.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    fail(ErrorCode::kIo, "cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                             " (address in use or not available?)");
  }
  return port;
}

void Server::start() {
  // A client that disconnects mid-write must not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  listen_thread_ = std::thread([this] { http_->listen_after_bind(); });
  load_thread_ = std::thread([this] { load_model(); });
}

void Server::load_model() {
  try {
    auto engine = loader_(options_.engine);
    std::lock_guard lock(load_mutex_);
    engine_ = std::move(engine);
    State expected = State::kLoading;
    state_.compare_exchange_strong(expected, State::kReady);
    QVL_LOG(kInfo) << "model " << model_id() << " ready";
  } catch (const std::exception& error) {
    std::lock_guard lock(load_mutex_);
    load_error_ = error.what();
    State expected = State::kLoading;
    state_.compare_exchange_strong(expected, State::kFailed);
    QVL_LOG(kError) << "loading the model failed: " << error.what();
  }
}

std::string Server::load_error() const {
  std::lock_guard lock(load_mutex_);
  return load_error_;
}

Engine* Server::ready_engine() {
  return state_.load() == State::kReady ? engine_.get() : nullptr;
}

std::string Server::model_id() const {
  if (!options_.model_alias.empty()) return options_.model_alias;
  if (engine_ && !engine_->info().name.empty()) return engine_->info().name;
  return std::filesystem::path(options_.engine.model_dir).filename().string();
}

void Server::install_routes() {
  HttpServer& http = *http_;
  const int threads = options_.http_threads > 0
                          ? options_.http_threads
                          : std::max(options_.parallel, 1) + std::max(options_.queue, 0) + 8;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http.set_payload_max_length(options_.max_body_bytes);
  http.set_read_timeout(options_.read_timeout_seconds, 0);
  http.set_write_timeout(options_.write_timeout_seconds, 0);
  // Idle keep-alive connections hold a thread and delay shutdown by up to this long.
  http.set_keep_alive_timeout(std::min(options_.read_timeout_seconds, 3));
  http.set_keep_alive_max_count(1000);
  http.set_tcp_nodelay(true);

  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const bool preflight = req.method == "OPTIONS";
    for (const auto& [name, value] :
         cors_headers(options_.cors_origin, req.get_header_value("Origin"), preflight)) {
      res.set_header(name, value);
    }
    if (state_.load() == State::kDraining) res.set_header("Connection", "close");
    if (preflight) {
      res.status = options_.cors_origin.empty() ? 405 : 204;
      return httplib::Server::HandlerResponse::Handled;
    }
    if (path_needs_api_key(req.path) &&
        !authorization_allows(req.get_header_value("Authorization"), options_.api_key)) {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, ApiError(401, "invalid_request_error",
                               "missing or wrong API key; send the header 'Authorization: Bearer "
                               "<key>' with the key given to qvl serve --api-key",
                               "", "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        // Called for every status >= 400; only fill in bodies httplib left empty.
        if (!res.body.empty() || res.status == 405 || res.status == 499) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        send_error(res, default_error_for(req, res.status, options_.max_body_bytes));
        return httplib::Server::HandlerResponse::Handled;
      }));

  http.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                                std::exception_ptr error) {
    std::string what = "unknown exception";
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    QVL_LOG(kError) << "handler failed: " << what;
    send_error(res, ApiError(500, "server_error", "internal error: " + what, "", "internal_error"));
  });

  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.count_request(endpoint_label(req.path), res.status);
    QVL_LOG(kDebug) << req.method << " " << req.path << " -> " << res.status;
  });

  http.Get("/health",
           [this](const httplib::Request&, httplib::Response& res) { handle_health(res); });
  http.Get("/metrics",
           [this](const httplib::Request&, httplib::Response& res) { handle_metrics(res); });
  http.Get("/v1/models",
           [this](const httplib::Request&, httplib::Response& res) { handle_models(res); });
  http.Get("/props",
           [this](const httplib::Request&, httplib::Response& res) { handle_props(res); });
  install_web_routes(http);
  http.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    handle_tokenize(req, res);
  });
  http.Post("/v1/chat/completions",
            [this](const httplib::Request& req, httplib::Response& res) { handle_chat(req, res); });
}

void Server::handle_health(httplib::Response& res) {
  switch (state_.load()) {
    case State::kReady:
      return send_json(res, 200, {{"status", "ok"}});
    case State::kLoading:
      res.set_header("Retry-After", "5");
      return send_json(res, 503, {{"status", "loading"}});
    case State::kFailed:
      return send_json(res, 503, {{"status", "error"}, {"error", load_error()}});
    case State::kDraining:
      return send_json(res, 503, {{"status", "shutting_down"}});
  }
}

void Server::handle_metrics(httplib::Response& res) {
  LiveGauges gauges;
  gauges.queue_depth = admission_.queued();
  gauges.active_requests = admission_.active();
  gauges.model_ready = state_.load() == State::kReady;
  EngineStats engine_stats;
  if (Engine* engine = ready_engine()) {
    engine_stats = engine->stats();
    gauges.engine = &engine_stats;
  }
  res.status = 200;
  res.set_content(metrics_.render(gauges), "text/plain; version=0.0.4; charset=utf-8");
}

void Server::handle_models(httplib::Response& res) {
  Engine* engine = ready_engine();
  if (!engine) {
    res.set_header("Retry-After", "5");
    return send_error(res,
                      ApiError(503, "server_error", "the model is still loading; retry shortly", "",
                               "model_loading"));
  }
  json model = {{"id", model_id()},
                {"object", "model"},
                {"created", started_at_},
                {"owned_by", "qvl"},
                {"context_length", engine->info().context_length}};
  send_json(res, 200, {{"object", "list"}, {"data", json::array({model})}});
}

void Server::handle_props(httplib::Response& res) {
  Engine* engine = ready_engine();
  if (!engine) {
    res.set_header("Retry-After", "5");
    return send_error(res,
                      ApiError(503, "server_error", "the model is still loading; retry shortly", "",
                               "model_loading"));
  }
  const ModelInfo& info = engine->info();
  const SamplingParams& sampling = info.default_sampling;
  const RequestLimits& limits = options_.limits;
  json props = {{"model", model_id()},
                {"context_length", info.context_length},
                {"default_sampling",
                 {{"temperature", sampling.temperature},
                  {"top_p", sampling.top_p},
                  {"top_k", sampling.top_k},
                  {"min_p", sampling.min_p},
                  {"repetition_penalty", sampling.repetition_penalty},
                  {"presence_penalty", sampling.presence_penalty},
                  {"frequency_penalty", sampling.frequency_penalty},
                  {"max_tokens", sampling.max_tokens}}},
                {"image",
                 {{"pixels_per_token", 32 * 32},
                  {"min_tokens", info.image_min_tokens},
                  {"max_tokens", info.image_max_tokens},
                  {"low_detail_max_tokens", limits.low_detail_max_tokens},
                  {"high_detail_max_tokens", limits.high_detail_max_tokens},
                  {"max_total_tokens", limits.max_total_image_tokens},
                  {"max_images_per_request", limits.max_images},
                  {"max_image_bytes", limits.max_image_bytes}}},
                {"max_body_bytes", options_.max_body_bytes}};
  const EngineStats stats = engine->stats();
  props["cache"] = {
      {"kv_cache_bytes", static_cast<uint64_t>(stats.kv_pages_total) * stats.kv_page_bytes},
      {"kv_page_tokens", stats.kv_page_tokens},
      {"kv_pages", stats.kv_pages_total},
      {"kv_storage", info.kv_cache},
      {"image_cache_bytes", stats.image_cache_budget_bytes},
      {"max_batch", options_.engine.max_batch},
      {"prefill_chunk", options_.engine.prefill_chunk}};
  // For the web page's server monitor: what the model runs on.
  props["runtime"] = {
      {"weights", info.weights},
      {"vision_weights", info.vision_weights},
      {"threads", options_.engine.threads > 0 ? options_.engine.threads : physical_core_count()}};
  send_json(res, 200, props);
}

void Server::handle_tokenize(const httplib::Request& req, httplib::Response& res) {
  Engine* engine = ready_engine();
  if (!engine) {
    res.set_header("Retry-After", "5");
    return send_error(res,
                      ApiError(503, "server_error", "the model is still loading; retry shortly", "",
                               "model_loading"));
  }
  try {
    const json body = parse_json_object(req.body, options_.limits.max_json_depth);
    const auto content = body.find("content");
    if (content == body.end() || content->is_null()) {
      fail_request("content", "missing required field 'content' (the text to tokenize)",
                   "missing_field");
    }
    if (!content->is_string())
      fail_request("content", "'content' must be a string", "invalid_type");
    const auto tokens = engine->tokenize(content->get<std::string>());
    send_json(res, 200, {{"tokens", tokens}, {"count", tokens.size()}});
  } catch (const ApiError& error) {
    send_error(res, error);
  } catch (const Error& error) {
    send_error(res, api_error_from(error));
  }
}

void Server::shutdown() {
  std::call_once(shutdown_once_, [this] {
    const State previous = state_.exchange(State::kDraining);
    http_->stop_accepting();
    const auto grace_end = std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(options_.shutdown_grace_seconds));
    while (admission_.active() + admission_.queued() > 0 &&
           std::chrono::steady_clock::now() < grace_end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    abandon_queue_.store(true);
    if (admission_.active() + admission_.queued() > 0) {
      QVL_LOG(kWarn) << "grace period over; cancelling " << admission_.active()
                     << " running requests";
    }
    // Cancelled work stops within one engine step; the loop covers requests that were between
    // admission and registration when cancel_all ran.
    while (admission_.active() + admission_.queued() > 0) {
      watch_.cancel_all(CancelReason::kShutdown);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    http_->end_connections();
    if (listen_thread_.joinable()) listen_thread_.join();
    if (load_thread_.joinable()) load_thread_.join();
    (void)previous;
  });
}

}  // namespace qvl::server
