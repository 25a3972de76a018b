#include "server/reasoning_split.h"

#include <algorithm>

#include "server/api_error.h"

namespace qvl::server {

namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// Length of the longest suffix of `s` that is a proper prefix of `tag` (a tag may be cut
// between two deltas).
size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

void ReasoningStream::run(ReasoningDelta& out, bool end) {
  for (;;) {
    switch (phase_) {
      case Phase::kLead: {  // leading whitespace, and a "<think>" the model wrote itself
        size_t i = 0;
        while (i < held_.size() && is_space(held_[i])) ++i;
        const std::string_view rest = std::string_view(held_).substr(i);
        if (rest.starts_with(kOpen)) {
          held_.erase(0, i + kOpen.size());
          continue;
        }
        if (!end && (rest.empty() || kOpen.starts_with(rest))) return;  // may still become one
        held_.erase(0, i);
        phase_ = Phase::kReasoning;
        continue;
      }
      case Phase::kReasoning: {
        const size_t close = held_.find(kClose);
        if (close != std::string::npos) {
          size_t keep = close;
          while (keep > 0 && is_space(held_[keep - 1])) --keep;
          out.reasoning.append(held_, 0, keep);
          held_.erase(0, close + kClose.size());
          phase_ = Phase::kAnswerLead;
          continue;
        }
        // Hold back a possible start of "</think>" and trailing whitespace (trimmed at the end).
        size_t give = end ? held_.size() : held_.size() - partial_tag_suffix(held_, kClose);
        while (give > 0 && is_space(held_[give - 1])) --give;
        out.reasoning.append(held_, 0, give);
        held_.erase(0, end ? held_.size() : give);
        return;
      }
      case Phase::kAnswerLead: {
        size_t i = 0;
        while (i < held_.size() && is_space(held_[i])) ++i;
        held_.erase(0, i);
        if (held_.empty()) return;
        phase_ = Phase::kAnswer;
        continue;
      }
      case Phase::kAnswer:
        out.content += held_;
        held_.clear();
        return;
    }
  }
}

ReasoningDelta ReasoningStream::feed(std::string_view text) {
  held_ += text;
  ReasoningDelta out;
  run(out, false);
  return out;
}

ReasoningDelta ReasoningStream::finish() {
  ReasoningDelta out;
  run(out, true);
  return out;
}

ReasoningOutput read_reasoning_output(const nlohmann::json& request) {
  ReasoningOutput out = ReasoningOutput::kSplit;
  const auto include = request.find("include_reasoning");
  if (include != request.end() && !include->is_null()) {
    if (!include->is_boolean()) {
      throw ApiError(400, "invalid_request_error", "'include_reasoning' must be a boolean",
                     "include_reasoning", "invalid_type");
    }
    if (!include->get<bool>()) out = ReasoningOutput::kOmit;
  }
  const auto format = request.find("reasoning_format");
  if (format != request.end() && !format->is_null()) {
    const std::string value = format->is_string() ? format->get<std::string>() : "";
    if (value == "none") {
      out = ReasoningOutput::kRaw;
    } else if (value != "deepseek" && value != "auto") {
      throw ApiError(400, "invalid_request_error",
                     "'reasoning_format' must be \"deepseek\" or \"auto\" (reasoning in "
                     "reasoning_content) or \"none\" (the text unparsed in content)",
                     "reasoning_format", "invalid_value");
    }
  }
  return out;
}

SplitAnswer split_reasoning(std::string_view text) {
  ReasoningStream stream;
  ReasoningDelta all = stream.feed(text);
  const ReasoningDelta tail = stream.finish();
  all.reasoning += tail.reasoning;
  all.content += tail.content;
  SplitAnswer out;
  out.reasoning = std::move(all.reasoning);
  if (stream.answer_started()) out.content = std::move(all.content);
  return out;
}

}  // namespace qvl::server
