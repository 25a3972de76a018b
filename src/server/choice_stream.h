// One choice of a streamed chat completion, as chat.completion.chunk deltas: the generated text
// as content, <tool_call> blocks as tool_calls deltas (with tools), a Thinking model's reasoning
// as reasoning_content (or left out), and log-probabilities with their tokens. Shared by the
// single answer and the per-page answers of a document (each page its own ChoiceStream).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qvl/engine.h"
#include "server/generation_job.h"
#include "server/reasoning_split.h"
#include "server/tool_calls.h"

namespace qvl::server {

class ChoiceStream {
 public:
  ChoiceStream(bool parse_tool_calls, ReasoningOutput reasoning, bool logprobs)
      : parse_tool_calls_(parse_tool_calls), reasoning_(reasoning), logprobs_(logprobs) {}

  struct Delta {
    nlohmann::json delta;
    nlohmann::json logprobs;  // null when not asked for
  };
  // The deltas to send for what the job produced since the last call.
  std::vector<Delta> feed(const GenerationJob::Progress& progress);
  // The end of the answer: whatever tool-call parsing or the reasoning split held back.
  std::vector<Delta> finish();
  // The finish_reason of the last chunk: "tool_calls" when the answer called a tool.
  const char* finish_reason(const GenerationResult& result) const;

 private:
  void text(const std::string& text, bool end, std::vector<Delta>& out);
  void answer(const std::string& text, bool end, std::vector<Delta>& out);

  const bool parse_tool_calls_;
  const ReasoningOutput reasoning_;
  const bool logprobs_;
  ToolCallStream tools_;
  ReasoningStream thoughts_;
};

}  // namespace qvl::server
