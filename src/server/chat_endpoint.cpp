// POST /v1/chat/completions: parse, admit (parallel slots + queue), generate on a job thread,
// answer as one JSON object or as an SSE stream.
#include "base/log.h"
#include "server/chat_context.h"
#include "server/choice_stream.h"
#include "server/file_part.h"
#include "server/per_page_request.h"
#include "server/video_part.h"

namespace qvl::server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

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

void Server::handle_chat(const HttpRequest& req, HttpResponse& res) {
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
    fetch_remote_videos(chat, options_.remote, options_.limits);
  } catch (const ApiError& error) {
    return send_error(res, error);
  }

  const auto deadline =
      received + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(options_.request_timeout_seconds));
  const int socket_fd = req.socket_fd;
  auto context = std::make_shared<ChatContext>();
  context->received = received;
  context->identity = new_completion_identity(model_id());
  context->include_usage = chat.include_usage;
  context->parse_tool_calls = chat.parse_tool_calls;
  context->reasoning = chat.reasoning;
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

  // Documents render once the request has its slot, so a queue of big PDFs waits in line instead
  // of rendering all at once; an error frees the slot (with the context) before the answer.
  std::vector<PageRequest> pages;
  try {
    if (chat.per_page) {
      pages = expand_document_pages(chat, options_.limits);
    } else {
      expand_documents(chat, options_.limits);
    }
  } catch (const ApiError& error) {
    return send_error(res, error);
  }

  context->job_started = Clock::now();
  if (chat.per_page) {
    context->pages =
        std::make_unique<PageJobs>(engine, admission_, std::move(pages), std::move(context->slot));
    context->registration = watch_.watch(socket_fd, deadline, &context->pages->cancel_state());
    if (chat.stream) return stream_pages(context, res);
    return finish_pages(context, res);
  }
  // The slot frees when the engine is done with the request, not when the last event reached the
  // client: a client's next request (or another's) must not get 429 meanwhile.
  context->job = std::make_unique<GenerationJob>(engine, std::move(chat.generation),
                                                 [slot = &context->slot] { slot->release(); });
  context->registration = watch_.watch(socket_fd, deadline, &context->job->cancel_state());
  context->job->wait_started();
  // A stream asked for is a stream, even when the job ended before any text (a short answer of
  // special tokens); only a job that failed before its first token answers with an HTTP error.
  const bool failed_before_text =
      context->job->finished() && job_failure(*context->job, context->timeout_seconds);
  if (chat.stream && !failed_before_text) return stream_chat(context, res);
  finish_chat(context, res);
}

void Server::finish_chat(const std::shared_ptr<ChatContext>& context, HttpResponse& res) {
  GenerationJob& job = *context->job;
  job.wait_finished();
  if (const auto failure = job_failure(job, context->timeout_seconds)) {
    record_chat_end(*context, failure->status());
    return send_error(res, *failure);
  }
  record_chat_end(*context, 200);
  res.status = 200;
  res.set_content(completion_json(context->identity, job.result(), context->parse_tool_calls,
                                  context->logprobs, context->reasoning)
                      .dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
}

void Server::begin_event_stream(HttpResponse& res) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_header("Content-Type", "text/event-stream");
}

void Server::stream_chat(const std::shared_ptr<ChatContext>& context, HttpResponse& res) {
  begin_event_stream(res);
  // Runs on the request's worker thread once the headers are sent; the status it returns is
  // the one /metrics counts (499 when the client cut the stream).
  res.stream = [this, context](StreamSink& sink) {
    GenerationJob& job = *context->job;
    const CompletionIdentity& id = context->identity;
    const bool usage = context->include_usage;
    auto send = [&](const std::string& data) {
      if (sink.write(data)) return true;
      job.cancel_state().request(CancelReason::kClientGone);
      return false;
    };
    bool connected =
        send(sse_event(chunk_json(id, {{"role", "assistant"}, {"content", ""}}, nullptr, usage)));
    ChoiceStream choice(context->parse_tool_calls, context->reasoning, context->logprobs);
    auto send_deltas = [&](const std::vector<ChoiceStream::Delta>& deltas) {
      for (const ChoiceStream::Delta& delta : deltas) {
        if (!send(sse_event(chunk_json(id, delta.delta, nullptr, usage, delta.logprobs)))) {
          return false;
        }
      }
      return true;
    };
    while (connected) {
      GenerationJob::Progress progress = job.wait(std::chrono::milliseconds(200));
      connected = send_deltas(choice.feed(progress));
      if (progress.finished) break;
    }
    if (connected) connected = send_deltas(choice.finish());
    if (!connected) {
      job.wait_finished();
      record_chat_end(*context, 499);
      return 499;
    }
    int status = 200;
    if (const auto failure = job_failure(job, context->timeout_seconds)) {
      // Headers are gone already; OpenAI clients raise an error for an error event.
      connected = send(sse_event(failure->to_json()));
      status = failure->status();
      record_chat_end(*context, status);
    } else {
      const GenerationResult& result = job.result();
      connected =
          send(sse_event(chunk_json(id, json::object(), choice.finish_reason(result), usage)));
      if (connected && usage) connected = send(sse_event(usage_chunk_json(id, result.stats)));
      if (connected) connected = send(sse_done());
      record_chat_end(*context, connected ? 200 : 499);
      if (!connected) status = 499;
    }
    return status;
  };
}

void Server::record_chat_end(ChatContext& context, int status) {
  const auto now = Clock::now();
  metrics_.observe_request_latency(std::chrono::duration<double>(now - context.received).count());
  if (status != 200 || !(context.job || context.pages)) return;
  const GenerationStats stats =
      context.job ? context.job->result().stats : context.pages->total_stats();
  GenerationJob& first_job = context.job ? *context.job : *context.pages->job(0);
  metrics_.add_tokens(stats.prompt_tokens, stats.completion_tokens, stats.image_tokens,
                      stats.video_tokens);
  metrics_.add_drafts(stats.draft_tokens, stats.draft_accepted_tokens);
  const double queued =
      std::chrono::duration<double>(context.job_started - context.received).count();
  metrics_.observe_time_to_first_token(queued + first_job.seconds_to_first_text());
  // Pictures and videos go through the same tower: both are "image encode" time.
  if (stats.image_tokens + stats.video_tokens > 0) {
    metrics_.observe_image_encode(stats.image_ms / 1000.0);
  }
}

}  // namespace qvl::server
