// Tool calls in answers: Qwen writes each call as "<tool_call>\n{"name": ..., "arguments":
// {...}}\n</tool_call>"; OpenAI clients expect message.tool_calls (and, streamed, tool_calls
// deltas with an index). Text outside the blocks stays content; a block that is not a JSON object
// with a string "name" stays content too.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "qvl/engine.h"

namespace qvl::server {

struct ParsedAnswer {
  std::string content;  // the text outside the calls, trimmed
  std::vector<ToolCall> calls;
};

ParsedAnswer parse_tool_calls(const std::string& text);

// [{"id","type":"function","function":{"name","arguments"}}]
nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls);

// Streams an answer as content deltas and whole tool-call deltas: text that might begin a
// "<tool_call>" is held back until it is clear, and a call is sent once its block is complete.
class ToolCallStream {
 public:
  // The deltas ({"content": ...} or {"tool_calls": [...]}) to send for `text`.
  std::vector<nlohmann::json> feed(std::string_view text);
  // The end of the answer: whatever is held back, as content.
  std::vector<nlohmann::json> finish();
  bool any_calls() const { return calls_ > 0; }

 private:
  void content(std::string text, std::vector<nlohmann::json>& out);
  std::string buffer_;
  std::string pending_space_;  // whitespace after a call: sent only if more text follows
  bool in_call_ = false;
  int calls_ = 0;
};

}  // namespace qvl::server
