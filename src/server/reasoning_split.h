// Thinking models' answers: the prompt opens a <think> block, so generated text is the reasoning,
// "</think>", then the answer. OpenAI-compatible servers (vLLM, llama.cpp, SGLang) return the two
// apart, as message.reasoning_content and content (streamed: delta.reasoning_content chunks, then
// delta.content). A leading "<think>" the model writes itself is dropped; whitespace around the
// reasoning and before the answer is trimmed (the chat template puts it back in later turns).
// Text without "</think>" (cut by max_tokens) is all reasoning.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace qvl::server {

// What a request asked to receive of a Thinking model's answer.
enum class ReasoningOutput {
  kSplit,  // reasoning_content + content (default; llama.cpp's reasoning_format "deepseek"/"auto")
  kOmit,   // content only (vLLM's include_reasoning: false)
  kRaw,    // the generated text unparsed in content (llama.cpp's reasoning_format "none")
};

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
};

// Splits text as it streams in; the deltas put together equal split_reasoning of the whole.
class ReasoningStream {
 public:
  ReasoningDelta feed(std::string_view text);
  ReasoningDelta finish();  // the end of the answer: whatever was held back
  bool answer_started() const { return phase_ == Phase::kAnswerLead || phase_ == Phase::kAnswer; }

 private:
  enum class Phase { kLead, kReasoning, kAnswerLead, kAnswer };
  void run(ReasoningDelta& out, bool end);
  Phase phase_ = Phase::kLead;
  std::string held_;  // text not yet given out: a possible tag, or whitespace that may be trailing
};

struct SplitAnswer {
  std::string reasoning;
  std::optional<std::string> content;  // nullopt: the answer never began (no "</think>")
};
SplitAnswer split_reasoning(std::string_view text);

// A request's choice, from the fields other servers' clients send: "reasoning_format" (llama.cpp:
// "none" -> kRaw; "deepseek", "auto" -> kSplit) and "include_reasoning" (vLLM: false -> kOmit).
// Anything else in them is ApiError 400 naming the field. Instruct models have no reasoning:
// the server ignores this for them.
ReasoningOutput read_reasoning_output(const nlohmann::json& request);

}  // namespace qvl::server
