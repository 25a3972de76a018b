// The load generator's HTTP side, over libcurl: POST /v1/chat/completions with "stream": true,
// timing every SSE chunk as it arrives, and plain GETs (/health, /metrics, /v1/models).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace qvl::cli {

struct HttpReply {
  long status = 0;    // 0: no HTTP response (see error)
  std::string error;  // transport failure, empty otherwise
  std::string body;
  std::string retry_after;  // the Retry-After header, if any
};

// One streamed completion as the client saw it. Times are seconds since the client's epoch (its
// construction), so the streams of one scenario share a time axis.
struct ChatStreamResult {
  long status = 0;               // HTTP status; 0 when no response arrived
  std::string error;             // transport failure, non-2xx body or an SSE error event's message
  std::string retry_after;       // Retry-After of a refused (429/503) request
  double sent_at = 0;            // request started
  double first_content_at = -1;  // first chunk with text; -1 if none came
  std::vector<double> content_times;  // arrival of every chunk that carried text
  // Arrival of every chunk that carried generated tokens: text, or log-probabilities of tokens
  // without text (requests with "logprobs" see every token this way).
  std::vector<double> token_times;
  std::vector<int64_t> token_counts;  // tokens in each of those chunks (at least 1)
  int64_t textless_tokens = 0;        // log-probability entries that came in chunks without text
  double done_at = 0;                 // response complete
  std::string text;                   // the streamed answer
  std::string finish_reason;
  int64_t prompt_tokens = -1;  // from the usage chunk (stream_options.include_usage)
  int64_t completion_tokens = -1;
  int64_t cached_tokens = -1;  // usage.prompt_tokens_details.cached_tokens, if the server says
  nlohmann::json timings;      // the server's own timings from the usage chunk, if any

  bool ok() const { return status >= 200 && status < 300 && error.empty(); }
  // Time to the first text; for an answer without any text (special tokens only), to its end.
  double ttft() const { return (first_content_at >= 0 ? first_content_at : done_at) - sent_at; }
};

class ChatStreamClient {
 public:
  // base_url: "http://host:port" (a trailing slash is ignored).
  ChatStreamClient(std::string base_url, std::string api_key, double request_timeout_seconds);

  HttpReply get(const std::string& path) const;

  // POSTs body (stream is forced on) to /v1/chat/completions and reads the stream to its end.
  // on_first_content, if set, runs on this thread when the first text arrives.
  ChatStreamResult stream_chat(nlohmann::json body,
                               const std::function<void()>& on_first_content = {}) const;

  // Seconds since the epoch of this client.
  double now() const;

 private:
  std::string base_url_;
  std::string api_key_;
  double request_timeout_seconds_;
  std::chrono::steady_clock::time_point epoch_;
};

}  // namespace qvl::cli
