#include "server/openai_format.h"

#include <chrono>
#include <random>

#include "server/logprobs_format.h"
#include "server/tool_calls.h"

namespace qvl::server {
namespace {

using nlohmann::json;

std::string random_hex(size_t length) {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(length, '0');
  for (char& c : text) c = kDigits[generator() & 15];
  return text;
}

double per_second(int64_t count, double ms) {
  return ms > 0 ? count * 1000.0 / ms : 0.0;
}

}  // namespace

CompletionIdentity new_completion_identity(const std::string& model) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return {"chatcmpl-" + random_hex(24),
          std::chrono::duration_cast<std::chrono::seconds>(now).count(), model};
}

const char* finish_reason_name(FinishReason reason) {
  return reason == FinishReason::kLength ? "length" : "stop";
}

json usage_json(const GenerationStats& stats) {
  json usage = {{"prompt_tokens", stats.prompt_tokens},
                {"completion_tokens", stats.completion_tokens},
                {"total_tokens", stats.prompt_tokens + stats.completion_tokens},
                {"prompt_tokens_details", {{"cached_tokens", stats.cached_tokens}}}};
  // Video pads among the prompt tokens (as vLLM-style servers report them), when there are any.
  if (stats.video_tokens > 0) usage["prompt_tokens_details"]["video_tokens"] = stats.video_tokens;
  // As OpenAI reports its reasoning models' (Thinking models only).
  if (stats.reasoning_tokens >= 0) {
    usage["completion_tokens_details"]["reasoning_tokens"] = stats.reasoning_tokens;
  }
  // Speculative decoding's drafts, in the fields OpenAI reports predicted outputs with: accepted
  // ones each saved a decode step; rejected ones cost a row of a step, never a token.
  if (stats.draft_tokens > 0) {
    usage["completion_tokens_details"]["accepted_prediction_tokens"] = stats.draft_accepted_tokens;
    usage["completion_tokens_details"]["rejected_prediction_tokens"] =
        stats.draft_tokens - stats.draft_accepted_tokens;
  }
  return usage;
}

json timings_json(const GenerationStats& stats) {
  return {{"prompt_tokens", stats.prompt_tokens},
          {"image_tokens", stats.image_tokens},
          {"video_tokens", stats.video_tokens},
          {"image_ms", stats.image_ms},
          {"prompt_ms", stats.prompt_ms},
          {"prompt_tokens_per_second", per_second(stats.prompt_tokens, stats.prompt_ms)},
          {"ttft_ms", stats.ttft_ms},
          {"completion_tokens", stats.completion_tokens},
          {"decode_ms", stats.decode_ms},
          // The first token comes from the prefill, so decode speed counts the others.
          {"completion_tokens_per_second",
           per_second(std::max<int64_t>(stats.completion_tokens - 1, 0), stats.decode_ms)},
          {"total_ms", stats.total_ms},
          {"constraint_ms", stats.constraint_ms},
          {"draft_tokens", stats.draft_tokens},
          {"draft_accepted_tokens", stats.draft_accepted_tokens}};
}

json completion_json(const CompletionIdentity& identity, const GenerationResult& result,
                     bool parse_tool_calls, bool with_logprobs, ReasoningOutput reasoning) {
  json message = {{"role", "assistant"}, {"content", result.text}, {"refusal", nullptr}};
  std::string answer = result.text;
  if (reasoning != ReasoningOutput::kRaw) {
    SplitAnswer split = split_reasoning(result.text);
    answer = split.content.value_or("");
    message["content"] = split.content ? json(answer) : json(nullptr);
    if (reasoning == ReasoningOutput::kSplit) {
      message["reasoning_content"] =
          split.reasoning.empty() ? json(nullptr) : json(std::move(split.reasoning));
    }
  }
  const char* finish = finish_reason_name(result.finish);
  if (parse_tool_calls) {
    ParsedAnswer parsed = server::parse_tool_calls(answer);
    if (!parsed.calls.empty()) {
      message["content"] = parsed.content.empty() ? json(nullptr) : json(parsed.content);
      message["tool_calls"] = tool_calls_json(parsed.calls);
      if (result.finish == FinishReason::kStop) finish = "tool_calls";
    }
  }
  json choice = {{"index", 0},
                 {"message", message},
                 {"logprobs", with_logprobs ? logprobs_json(result.logprobs) : json(nullptr)},
                 {"finish_reason", finish}};
  return completion_with_choices(identity, json::array({choice}), result.stats);
}

json completion_with_choices(const CompletionIdentity& identity, json choices,
                             const GenerationStats& stats) {
  return {{"id", identity.id},
          {"object", "chat.completion"},
          {"created", identity.created},
          {"model", identity.model},
          {"choices", std::move(choices)},
          {"usage", usage_json(stats)},
          {"system_fingerprint", nullptr},
          {"timings", timings_json(stats)}};
}

json chunk_json(const CompletionIdentity& identity, const json& delta, const char* finish_reason,
                bool with_usage_field, const json& logprobs) {
  json choice = {{"index", 0},
                 {"delta", delta},
                 {"logprobs", logprobs},
                 {"finish_reason", finish_reason ? json(finish_reason) : json(nullptr)}};
  json chunk = {{"id", identity.id},
                {"object", "chat.completion.chunk"},
                {"created", identity.created},
                {"model", identity.model},
                {"system_fingerprint", nullptr},
                {"choices", json::array({choice})}};
  if (with_usage_field) chunk["usage"] = nullptr;
  return chunk;
}

json usage_chunk_json(const CompletionIdentity& identity, const GenerationStats& stats) {
  return {{"id", identity.id},
          {"object", "chat.completion.chunk"},
          {"created", identity.created},
          {"model", identity.model},
          {"system_fingerprint", nullptr},
          {"choices", json::array()},
          {"usage", usage_json(stats)},
          {"timings", timings_json(stats)}};
}

std::string sse_event(const json& data) {
  // Invalid UTF-8 cannot come from the engine (whole characters only), but replace rather than
  // throw if it ever does.
  return "data: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

std::string sse_done() {
  return "data: [DONE]\n\n";
}

}  // namespace qvl::server
