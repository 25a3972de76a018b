#include "cli/stream_chunk.h"

#include <algorithm>
#include <cmath>

namespace qvl::cli {
namespace {

using nlohmann::json;

}  // namespace

std::string error_message(const std::string& body) {
  const json parsed = json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object() &&
      parsed["error"].value("message", json()).is_string()) {
    return parsed["error"]["message"].get<std::string>();
  }
  return body.substr(0, 300);
}

namespace {

void read_usage(const json& chunk, ChatStreamResult& result) {
  const auto usage = chunk.find("usage");
  if (usage == chunk.end() || !usage->is_object()) return;
  result.prompt_tokens = usage->value("prompt_tokens", int64_t{-1});
  result.completion_tokens = usage->value("completion_tokens", int64_t{-1});
  if (const auto details = usage->find("prompt_tokens_details");
      details != usage->end() && details->is_object()) {
    result.cached_tokens = details->value("cached_tokens", int64_t{-1});
  }
  if (const auto timings = chunk.find("timings"); timings != chunk.end()) {
    result.timings = *timings;
  }
}

// Log-probability entries of the chunk's tokens (choices[0].logprobs.content).
size_t logprob_entries(const json& choice) {
  const auto logprobs = choice.find("logprobs");
  if (logprobs == choice.end() || !logprobs->is_object()) return 0;
  const auto content = logprobs->find("content");
  return content != logprobs->end() && content->is_array() ? content->size() : 0;
}

}  // namespace

bool read_stream_event(const std::string& data, double at, ChatStreamResult& result) {
  const json chunk = json::parse(data, nullptr, false);
  if (!chunk.is_object()) {
    result.error = "the server sent an SSE event that is not JSON: " + data.substr(0, 200);
    return false;
  }
  if (chunk.contains("error")) {
    result.error = "error event in the stream: " + error_message(data);
    return false;
  }
  read_usage(chunk, result);
  const auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty()) return false;
  const json& choice = choices->front();
  if (const auto reason = choice.find("finish_reason");
      reason != choice.end() && reason->is_string()) {
    result.finish_reason = reason->get<std::string>();
  }
  std::string text;
  if (const auto delta = choice.find("delta"); delta != choice.end() && delta->is_object()) {
    if (const auto content = delta->find("content");
        content != delta->end() && content->is_string()) {
      text = content->get<std::string>();
    }
  }
  const size_t entries = logprob_entries(choice);
  if (text.empty() && entries == 0) return false;
  result.token_times.push_back(at);
  result.token_counts.push_back(std::max<int64_t>(1, static_cast<int64_t>(entries)));
  if (text.empty()) {
    result.textless_tokens += static_cast<int64_t>(entries);
    return false;
  }
  const bool first = result.first_content_at < 0;
  if (first) result.first_content_at = at;
  result.content_times.push_back(at);
  result.text += text;
  return first;
}

double steady_decode_rate(const std::vector<ChatStreamResult>& streams) {
  double begin = -INFINITY, end = INFINITY;
  for (const ChatStreamResult& r : streams) {
    if (r.token_times.empty()) return NAN;
    begin = std::max(begin, r.token_times.front());
    end = std::min(end, r.token_times.back());
  }
  int64_t tokens = 0;
  for (const ChatStreamResult& r : streams) {
    for (size_t k = 0; k < r.token_times.size(); ++k) {
      if (r.token_times[k] > begin && r.token_times[k] <= end) tokens += r.token_counts[k];
    }
  }
  if (!(end > begin) || tokens < 4 * static_cast<int64_t>(streams.size())) return NAN;
  return static_cast<double>(tokens) / (end - begin);
}

}  // namespace qvl::cli
