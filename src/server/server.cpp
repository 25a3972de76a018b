#include "server/server.h"

#include <csignal>
#include <filesystem>

#include "base/log.h"
#include "base/thread_pool.h"
#include "server/access.h"
#include "server/api_error.h"
#include "server/web_assets.h"

namespace qvl::server {

using nlohmann::json;

namespace {

void send_json(HttpResponse& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// Bounded set of endpoint labels for metrics.
std::string endpoint_label(const std::string& path) {
  for (const char* known : {"/v1/chat/completions", "/v1/media/preview", "/v1/models", "/props",
                            "/tokenize", "/health", "/metrics", "/"}) {
    if (path == known) return known;
  }
  return "other";
}

ApiError default_error_for(const HttpRequest& req, int status) {
  switch (status) {
    case 404:
      return ApiError(404, "invalid_request_error",
                      "unknown endpoint " + req.method.substr(0, 16) + " " +
                          req.path.substr(0, 128) +
                          "; this server has POST /v1/chat/completions, POST /v1/media/preview, "
                          "GET /v1/models, GET /props, POST /tokenize, GET /health, GET /metrics "
                          "and the web page at /",
                      "", "unknown_url");
    default:
      return ApiError(status, status >= 500 ? "server_error" : "invalid_request_error",
                      "HTTP error " + std::to_string(status), "", "");
  }
}

}  // namespace

void send_error(HttpResponse& res, const ApiError& error) {
  send_json(res, error.status(), error.to_json());
}

Server::Server(ServerOptions options, EngineLoader loader)
    : options_(std::move(options)),
      loader_(std::move(loader)),
      admission_(options_.parallel, options_.queue),
      started_at_(std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count()) {
  if (!loader_) loader_ = [](const EngineOptions& engine) { return Engine::load(engine); };
  options_.limits.max_image_bytes =
      std::min(options_.limits.max_image_bytes, options_.engine.max_image_bytes);
  options_.remote.max_bytes = options_.limits.max_image_bytes;
  HttpServerOptions http;
  http.limits.max_body_bytes = options_.max_body_bytes;
  http.connections.header_timeout_seconds = options_.read_timeout_seconds;
  http.connections.body_stall_seconds = options_.read_timeout_seconds;
  http.connections.min_body_bytes_per_second = options_.min_body_bytes_per_second;
  http.connections.max_connections = options_.max_connections;
  http.connections.max_connections_per_ip = options_.max_connections_per_ip;
  http.write_timeout_seconds = options_.write_timeout_seconds;
  http.max_workers = options_.http_threads > 0
                         ? options_.http_threads
                         : std::max(options_.parallel, 1) + std::max(options_.queue, 0) + 8;
  http_ = std::make_unique<HttpServer>(http, make_app());
}

Server::~Server() {
  shutdown();
}

int Server::bind() {
  // The backlog bounds connections the kernel holds before the event thread accepts them.
  listening_ = open_listening_socket(options_.host, options_.port, 1024);
  return listening_.port;
}

void Server::start() {
  // A client that disconnects mid-write must not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  http_->start(listening_);
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

Engine* Server::ready_engine_or_503(HttpResponse& res) {
  Engine* engine = ready_engine();
  if (!engine) {
    res.set_header("Retry-After", "5");
    send_error(res, ApiError(503, "server_error", "the model is still loading; retry shortly", "",
                             "model_loading"));
  }
  return engine;
}

std::string Server::model_id() const {
  if (!options_.model_alias.empty()) return options_.model_alias;
  if (engine_ && !engine_->info().name.empty()) return engine_->info().name;
  return std::filesystem::path(options_.engine.model_dir).filename().string();
}

HttpApp Server::make_app() {
  HttpApp app;
  app.on_head = [this](const HttpRequest& req) { return on_head(req); };
  // Generation waits for a slot and for the engine; tokenizing a large body takes a while.
  app.blocking = [](const HttpRequest& req) { return req.method == "POST"; };
  app.handle = [this](const HttpRequest& req, HttpResponse& res) {
    try {
      route(req, res);
    } catch (const std::exception& error) {
      QVL_LOG(kError) << "handler failed: " << error.what();
      res = HttpResponse();
      send_error(res, ApiError(500, "server_error", std::string("internal error: ") + error.what(),
                               "", "internal_error"));
    }
    add_common_headers(req, res);
  };
  app.done = [this](const std::string& path, int status) {
    metrics_.count_request(endpoint_label(path), status);
    QVL_LOG(kDebug) << path.substr(0, 128) << " -> " << status;
  };
  app.error_body = [](int status, const std::string& message, const std::string& code) {
    return ApiError(status, status >= 500 ? "server_error" : "invalid_request_error", message, "",
                    code)
        .to_json()
        .dump(-1, ' ', false, json::error_handler_t::replace);
  };
  app.draining = [this] { return state_.load() == State::kDraining; };
  return app;
}

void Server::add_common_headers(const HttpRequest& req, HttpResponse& res) const {
  for (const auto& [name, value] : cors_headers(
           options_.cors_origin, req.get_header_value("Origin"), req.method == "OPTIONS")) {
    res.set_header(name, value);
  }
}

namespace {
bool is_read(const HttpRequest& req) {
  return req.method == "GET" || req.method == "HEAD";
}
bool known_route(const HttpRequest& req) {
  const std::string& path = req.path;
  if (is_read(req)) {
    return path == "/health" || path == "/metrics" || path == "/v1/models" || path == "/props" ||
           find_web_asset(path == "/index.html" ? "/" : path) != nullptr;
  }
  return req.method == "POST" &&
         (path == "/tokenize" || path == "/v1/chat/completions" || path == "/v1/media/preview");
}
}  // namespace

std::optional<HttpResponse> Server::on_head(const HttpRequest& req) {
  HttpResponse res;
  if (req.method == "OPTIONS") {
    res.status = options_.cors_origin.empty() ? 405 : 204;
  } else if (!known_route(req)) {
    send_error(res, default_error_for(req, 404));
  } else if (path_needs_api_key(req.path) &&
             !authorization_allows(req.get_header_value("Authorization"), options_.api_key)) {
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, ApiError(401, "invalid_request_error",
                             "missing or wrong API key; send the header 'Authorization: Bearer "
                             "<key>' with the key given to qvl serve --api-key",
                             "", "invalid_api_key"));
  } else {
    return std::nullopt;
  }
  add_common_headers(req, res);
  return res;
}

void Server::route(const HttpRequest& req, HttpResponse& res) {
  const std::string& path = req.path;
  if (path == "/v1/chat/completions") return handle_chat(req, res);
  if (path == "/v1/media/preview") return handle_media_preview(req, res);
  if (path == "/tokenize") return handle_tokenize(req, res);
  if (path == "/health") return handle_health(res);
  if (path == "/metrics") return handle_metrics(res);
  if (path == "/v1/models") return handle_models(res);
  if (path == "/props") return handle_props(res);
  serve_web_asset(req, res);
}

void Server::handle_health(HttpResponse& res) {
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

void Server::handle_metrics(HttpResponse& res) {
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

namespace {

// What model this is and how it is stored and run, for /v1/models and /props (the page's model
// line): its size in the family, the file's format and quantization, the types the engine runs.
json model_description(const ModelInfo& info) {
  return {{"size", info.size},
          {"parameters", info.parameters},
          {"active_parameters", info.active_parameters},
          {"experts", info.experts},
          {"experts_per_token", info.experts_per_token},
          {"format", info.file_format},
          {"file_type", info.file_type},
          {"vision_file_type", info.vision_file_type},
          {"quant", info.weights},
          {"vision_quant", info.vision_weights}};
}

}  // namespace

void Server::handle_models(HttpResponse& res) {
  Engine* engine = ready_engine_or_503(res);
  if (!engine) return;
  json model = {{"id", model_id()},
                {"object", "model"},
                {"created", started_at_},
                {"owned_by", "qvl"},
                {"context_length", engine->info().context_length},
                // Which of the family's chat templates the model has: a Thinking model's answers
                // carry reasoning_content.
                {"variant", engine->info().variant},
                {"reasoning", engine->info().thinking}};
  model.update(model_description(engine->info()));
  send_json(res, 200, {{"object", "list"}, {"data", json::array({model})}});
}

void Server::handle_props(HttpResponse& res) {
  Engine* engine = ready_engine_or_503(res);
  if (!engine) return;
  const ModelInfo& info = engine->info();
  const SamplingParams& sampling = info.default_sampling;
  const RequestLimits& limits = options_.limits;
  json props = {{"model", model_id()},
                {"variant", info.variant},
                {"reasoning", info.thinking},
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
                // What a video costs here (docs/video-model.md); requests may lower these.
                {"video",
                 {{"pixels_per_token", 32 * 32 * 2},
                  {"fps", info.video_fps},
                  {"max_fps", info.video_max_fps},
                  {"max_frames", info.video_max_frames},
                  {"max_pixels", info.video_max_pixels},
                  {"max_videos_per_request", limits.max_videos},
                  {"max_video_bytes", limits.max_video_bytes}}},
                // What a document (`file` part) may be and what its pages cost here.
                {"document",
                 {{"max_document_bytes", limits.documents.render.max_bytes},
                  {"max_pages", limits.documents.render.max_pages},
                  {"page_tokens", limits.documents.page_tokens},
                  {"low_detail_page_tokens", limits.low_detail_max_tokens},
                  {"high_detail_page_tokens", limits.documents.high_detail_page_tokens},
                  {"max_documents_per_request", limits.documents.max_documents}}},
                {"max_body_bytes", options_.max_body_bytes}};
  props.update(model_description(info));
  const EngineStats stats = engine->stats();
  props["cache"] = {
      {"kv_cache_bytes", static_cast<uint64_t>(stats.kv_pages_total) * stats.kv_page_bytes},
      {"kv_page_tokens", stats.kv_page_tokens},
      {"kv_pages", stats.kv_pages_total},
      {"kv_storage", info.kv_cache},
      {"prefix_cache", options_.engine.prefix_cache},
      {"image_cache_bytes", stats.image_cache_budget_bytes},
      {"max_batch", options_.engine.max_batch},
      {"prefill_chunk", options_.engine.prefill_chunk}};
  // For the web page's server monitor: what the model runs on.
  props["runtime"] = {
      {"weights", info.weights},
      {"vision_weights", info.vision_weights},
      {"weights_bytes", info.weight_bytes},
      {"threads", options_.engine.threads > 0 ? options_.engine.threads : physical_core_count()}};
  send_json(res, 200, props);
}

void Server::handle_tokenize(const HttpRequest& req, HttpResponse& res) {
  Engine* engine = ready_engine_or_503(res);
  if (!engine) return;
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
    state_.store(State::kDraining);
    // No new connections; idle ones and requests still being sent are closed now.
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
    // Finished answers get a moment to reach their clients; then every connection is cut.
    http_->stop(std::chrono::milliseconds(1000));
    if (load_thread_.joinable()) load_thread_.join();
  });
}

}  // namespace qvl::server
