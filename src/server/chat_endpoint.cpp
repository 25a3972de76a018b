// POST /v1/chat/completions: parse, admit (parallel slots + queue), generate on a job thread,
// answer as one JSON object or as an SSE stream.
#include <httplib.h>

#include "base/log.h"
#include "server/api_error.h"
#include "server/generation_job.h"
#include "server/logprobs_format.h"
#include "server/openai_format.h"
#include "server/server.h"

namespace qvl::server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Server::ChatContext {
  Clock::time_point received;
  Clock::time_point job_started;
  CompletionIdentity identity;
  bool include_usage = false;
  bool logprobs = false;
  double timeout_seconds = 0;
  // Destroyed bottom-up: the watch ends before the job it points into, the slot frees last.
  Admission::Slot slot;
  std::unique_ptr<GenerationJob> job;
  ConnectionWatch::Registration registration;
};

namespace {

ApiError cancelled_error(CancelReason reason, double timeout_seconds) {
  switch (reason) {
    case CancelReason::kDeadline:
      return ApiError(504, "timeout_error",
                      "the request took longer than this server's " +
                          std::to_string(static_cast<int64_t>(timeout_seconds)) +
                          "-second limit (--timeout); ask for fewer tokens (max_tokens) or send "
                          "smaller images",
                      "", "timeout");
    case CancelReason::kShutdown:
      return ApiError(503, "server_error", "the server is shutting down; retry the request", "",
                      "shutting_down");
    default:
      return ApiError(499, "cancelled", "the client closed the connection", "", "cancelled");
  }
}

// The error that ended the job, if it did not end normally.
std::optional<ApiError> job_failure(GenerationJob& job, double timeout_seconds) {
  if (const auto error = job.error()) {
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kCancelled || job.cancel_state().cancel.load()) {
        return cancelled_error(job.cancel_state().why(), timeout_seconds);
      }
      return api_error_from(e);
    } catch (const std::exception& e) {
      QVL_LOG(kError) << "generation failed: " << e.what();
      return ApiError(500, "server_error", std::string("internal error: ") + e.what(), "",
                      "internal_error");
    }
  }
  if (job.result().finish == FinishReason::kCancelled) {
    return cancelled_error(job.cancel_state().why(), timeout_seconds);
  }
  return std::nullopt;
}

}  // namespace

void Server::handle_chat(const httplib::Request& req, httplib::Response& res) {
  const auto received = Clock::now();
  const State state = state_.load();
  if (state != State::kReady) {
    res.set_header("Retry-After", "5");
    if (state == State::kDraining) {
      return send_error(res, ApiError(503, "server_error",
                                      "the server is shutting down; retry "
                                      "the request",
                                      "", "shutting_down"));
    }
    return send_error(
        res, ApiError(503, "server_error",
                      state == State::kLoading ? "the model is still loading; retry shortly"
                                               : "the model failed to load: " + load_error(),
                      "", "model_loading"));
  }
  Engine& engine = *engine_;
  ChatRequest chat;
  try {
    chat = parse_chat_request(req.body, engine.info(), options_.limits);
    for (const RemoteImage& remote : chat.remote_images) {
      chat.generation.images[remote.image_index].bytes =
          fetch_remote_image(remote.url, options_.remote, remote.param);
    }
  } catch (const ApiError& error) {
    return send_error(res, error);
  }

  const auto deadline =
      received + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(options_.request_timeout_seconds));
  const int socket_fd =
      find_connection_socket(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  auto context = std::make_shared<ChatContext>();
  context->received = received;
  context->identity = new_completion_identity(model_id());
  context->include_usage = chat.include_usage;
  context->logprobs = chat.generation.top_logprobs >= 0;
  context->timeout_seconds = options_.request_timeout_seconds;

  const auto outcome = admission_.enter(context->slot, [&] {
    return !peer_disconnected(socket_fd) && !abandon_queue_.load() && Clock::now() < deadline;
  });
  if (outcome == Admission::Outcome::kQueueFull) {
    res.set_header("Retry-After", "1");
    return send_error(res, ApiError(429, "rate_limit_error",
                                    "the server is busy: " + std::to_string(admission_.parallel()) +
                                        " requests are generating and the queue is full; retry "
                                        "after a second",
                                    "", "rate_limit_exceeded"));
  }
  if (outcome == Admission::Outcome::kGaveUp) {
    const CancelReason reason = peer_disconnected(socket_fd) ? CancelReason::kClientGone
                                : abandon_queue_.load()      ? CancelReason::kShutdown
                                                             : CancelReason::kDeadline;
    return send_error(res, cancelled_error(reason, options_.request_timeout_seconds));
  }

  context->job_started = Clock::now();
  context->job = std::make_unique<GenerationJob>(engine, std::move(chat.generation));
  context->registration = watch_.watch(socket_fd, deadline, &context->job->cancel_state());
  context->job->wait_started();
  // A stream asked for is a stream, even when the job ended before any text (a short answer of
  // special tokens); only a job that failed before its first token answers with an HTTP error.
  const bool failed_before_text =
      context->job->finished() && job_failure(*context->job, context->timeout_seconds);
  if (chat.stream && !failed_before_text) return stream_chat(context, res);
  finish_chat(context, res);
}

void Server::finish_chat(const std::shared_ptr<ChatContext>& context, httplib::Response& res) {
  GenerationJob& job = *context->job;
  job.wait_finished();
  if (const auto failure = job_failure(job, context->timeout_seconds)) {
    record_chat_end(*context, failure->status());
    return send_error(res, *failure);
  }
  record_chat_end(*context, 200);
  res.status = 200;
  res.set_content(completion_json(context->identity, job.result(), context->logprobs)
                      .dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
}

void Server::stream_chat(const std::shared_ptr<ChatContext>& context, httplib::Response& res) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider("text/event-stream", [this, context](size_t,
                                                                        httplib::DataSink& sink) {
    GenerationJob& job = *context->job;
    const CompletionIdentity& id = context->identity;
    const bool usage = context->include_usage;
    auto send = [&](const std::string& data) {
      if (sink.write(data.data(), data.size())) return true;
      job.cancel_state().request(CancelReason::kClientGone);
      return false;
    };
    bool connected =
        send(sse_event(chunk_json(id, {{"role", "assistant"}, {"content", ""}}, nullptr, usage)));
    while (connected) {
      GenerationJob::Progress progress = job.wait(std::chrono::milliseconds(200));
      if (!progress.text.empty() || !progress.logprobs.empty()) {
        const json logprobs = context->logprobs ? logprobs_json(progress.logprobs) : json(nullptr);
        connected =
            send(sse_event(chunk_json(id, {{"content", progress.text}}, nullptr, usage, logprobs)));
      }
      if (progress.finished) break;
    }
    if (!connected) {
      job.wait_finished();
      record_chat_end(*context, 499);
      return false;
    }
    if (const auto failure = job_failure(job, context->timeout_seconds)) {
      // Headers are gone already; OpenAI clients raise an error for an error event.
      send(sse_event(failure->to_json()));
      record_chat_end(*context, failure->status());
    } else {
      const GenerationResult& result = job.result();
      send(sse_event(chunk_json(id, json::object(), finish_reason_name(result.finish), usage)));
      if (usage) send(sse_event(usage_chunk_json(id, result.stats)));
      send(sse_done());
      record_chat_end(*context, 200);
    }
    sink.done();
    return true;
  });
}

void Server::record_chat_end(ChatContext& context, int status) {
  const auto now = Clock::now();
  metrics_.observe_request_latency(std::chrono::duration<double>(now - context.received).count());
  if (status != 200 || !context.job) return;
  const GenerationStats& stats = context.job->result().stats;
  metrics_.add_tokens(stats.prompt_tokens, stats.completion_tokens, stats.image_tokens);
  const double queued =
      std::chrono::duration<double>(context.job_started - context.received).count();
  metrics_.observe_time_to_first_token(queued + context.job->seconds_to_first_text());
  if (stats.image_tokens > 0) metrics_.observe_image_encode(stats.image_ms / 1000.0);
}

}  // namespace qvl::server
