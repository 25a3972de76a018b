#include "server/choice_stream.h"

#include "server/logprobs_format.h"
#include "server/openai_format.h"

namespace qvl::server {

using nlohmann::json;

std::vector<ChoiceStream::Delta> ChoiceStream::feed(const GenerationJob::Progress& progress) {
  std::vector<Delta> out;
  if (progress.text.empty() && progress.logprobs.empty()) return out;
  const bool split = reasoning_ != ReasoningOutput::kRaw;
  if (logprobs_ && !parse_tool_calls_ && !split) {
    out.push_back({{{"content", progress.text}}, logprobs_json(progress.logprobs)});
    return out;
  }
  // Tool-call parsing and the reasoning split hold text back: log-probabilities then go in
  // chunks of their own.
  text(progress.text, false, out);
  if (logprobs_ && !progress.logprobs.empty()) {
    out.push_back({json::object(), logprobs_json(progress.logprobs)});
  }
  return out;
}

std::vector<ChoiceStream::Delta> ChoiceStream::finish() {
  std::vector<Delta> out;
  text("", true, out);
  return out;
}

const char* ChoiceStream::finish_reason(const GenerationResult& result) const {
  const bool called = tools_.any_calls() && result.finish == FinishReason::kStop;
  return called ? "tool_calls" : finish_reason_name(result.finish);
}

void ChoiceStream::text(const std::string& text, bool end, std::vector<Delta>& out) {
  if (reasoning_ == ReasoningOutput::kRaw) return answer(text, end, out);
  const ReasoningDelta delta = end ? thoughts_.finish() : thoughts_.feed(text);
  if (!delta.reasoning.empty() && reasoning_ == ReasoningOutput::kSplit) {
    out.push_back({{{"reasoning_content", delta.reasoning}}, nullptr});
  }
  answer(delta.content, end, out);
}

void ChoiceStream::answer(const std::string& text, bool end, std::vector<Delta>& out) {
  if (!parse_tool_calls_) {
    if (!text.empty()) out.push_back({{{"content", text}}, nullptr});
    return;
  }
  for (json& delta : end ? tools_.finish() : tools_.feed(text)) {
    out.push_back({std::move(delta), nullptr});
  }
}

}  // namespace qvl::server
