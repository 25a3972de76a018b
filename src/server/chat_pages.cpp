// The answers of a per-page document request ("document_mode": "per_page",
// server/per_page_request.h): one choice per page in page order, choices[k].index = k and qvl's
// choices[k].page = the page's number in the document. Streamed, the pages' chunks interleave as
// they generate, each carrying its index (as OpenAI streams n > 1 choices) and page; a page's
// last chunk carries its finish_reason. A page whose generation fails gets finish_reason
// "error" and the error object in its choice ("error": {message, type, param, code}); the other
// pages go on. Cancelling (client gone, deadline, shutdown) ends the whole request as for one
// answer. usage sums the pages.
#include "server/chat_context.h"
#include "server/choice_stream.h"

namespace qvl::server {

using nlohmann::json;

namespace {

// The whole request's failure: it was cancelled.
std::optional<ApiError> pages_failure(PageJobs& pages, double timeout_seconds) {
  if (!pages.cancel_state().cancel.load()) return std::nullopt;
  return cancelled_error(pages.cancel_state().why(), timeout_seconds);
}

json page_error_choice(const ApiError& error) {
  return {{"message", {{"role", "assistant"}, {"content", nullptr}, {"refusal", nullptr}}},
          {"logprobs", nullptr},
          {"finish_reason", "error"},
          {"error", error.to_json()["error"]}};
}

void set_page(json& choice, PageJobs& pages, size_t index) {
  choice["index"] = index;
  choice["page"] = pages.page_number(index);
}

}  // namespace

void Server::finish_pages(const std::shared_ptr<ChatContext>& context, HttpResponse& res) {
  PageJobs& pages = *context->pages;
  while (!pages.finished()) pages.poll(std::chrono::milliseconds(200));
  if (const auto failure = pages_failure(pages, context->timeout_seconds)) {
    record_chat_end(*context, failure->status());
    return send_error(res, *failure);
  }
  json choices = json::array();
  for (size_t k = 0; k < pages.size(); ++k) {
    GenerationJob& job = *pages.job(k);
    json choice;
    if (const auto failure = job_failure(job, context->timeout_seconds)) {
      choice = page_error_choice(*failure);
    } else {
      choice = completion_json(context->identity, job.result(), context->parse_tool_calls,
                               context->logprobs, context->reasoning)["choices"][0];
    }
    set_page(choice, pages, k);
    choices.push_back(std::move(choice));
  }
  record_chat_end(*context, 200);
  res.status = 200;
  res.set_content(
      completion_with_choices(context->identity, std::move(choices), pages.total_stats())
          .dump(-1, ' ', false, json::error_handler_t::replace),
      "application/json");
}

void Server::stream_pages(const std::shared_ptr<ChatContext>& context, HttpResponse& res) {
  begin_event_stream(res);
  res.stream = [this, context](StreamSink& sink) {
    PageJobs& pages = *context->pages;
    const bool usage = context->include_usage;
    auto send_chunk = [&](size_t k, const json& delta, const char* finish,
                          const json& logprobs = nullptr, const json& error = nullptr) {
      json chunk = chunk_json(context->identity, delta, finish, usage, logprobs);
      set_page(chunk["choices"][0], pages, k);
      if (!error.is_null()) chunk["choices"][0]["error"] = error;
      if (sink.write(sse_event(chunk))) return true;
      pages.cancel_state().request(CancelReason::kClientGone);
      return false;
    };
    auto send_deltas = [&](size_t k, const std::vector<ChoiceStream::Delta>& deltas) {
      for (const ChoiceStream::Delta& delta : deltas) {
        if (!send_chunk(k, delta.delta, nullptr, delta.logprobs)) return false;
      }
      return true;
    };
    std::vector<ChoiceStream> choices(
        pages.size(),
        ChoiceStream(context->parse_tool_calls, context->reasoning, context->logprobs));
    bool connected = true;
    for (size_t k = 0; k < pages.size() && connected; ++k) {
      connected = send_chunk(k, {{"role", "assistant"}, {"content", ""}}, nullptr);
    }
    while (connected && !pages.finished()) {
      for (const PageJobs::Event& event : pages.poll(std::chrono::milliseconds(200))) {
        const size_t k = event.index;
        connected = connected && send_deltas(k, choices[k].feed(event.progress));
        if (!connected || !event.progress.finished || pages.cancel_state().cancel.load()) continue;
        connected = send_deltas(k, choices[k].finish());
        GenerationJob& job = *pages.job(k);
        if (const auto failure = job_failure(job, context->timeout_seconds)) {
          connected = connected &&
                      send_chunk(k, json::object(), "error", nullptr, failure->to_json()["error"]);
        } else {
          connected =
              connected && send_chunk(k, json::object(), choices[k].finish_reason(job.result()));
        }
      }
    }
    while (!pages.finished()) pages.poll(std::chrono::milliseconds(200));
    if (!connected) {
      record_chat_end(*context, 499);
      return 499;
    }
    if (const auto failure = pages_failure(pages, context->timeout_seconds)) {
      // Headers are gone already; OpenAI clients raise an error for an error event.
      sink.write(sse_event(failure->to_json()));
      record_chat_end(*context, failure->status());
      return failure->status();
    }
    if (usage) {
      connected = sink.write(sse_event(usage_chunk_json(context->identity, pages.total_stats())));
    }
    if (connected) connected = sink.write(sse_done());
    record_chat_end(*context, connected ? 200 : 499);
    return connected ? 200 : 499;
  };
}

}  // namespace qvl::server
