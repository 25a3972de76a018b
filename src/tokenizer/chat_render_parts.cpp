#include "tokenizer/chat_render_parts.h"

namespace qvl::chat_parts {

bool content_is_truthy(const ChatMessage& m) {
  if (!m.content_is_string) return !m.parts.empty();
  return !m.parts.empty() && !m.parts.front().text.empty();
}

void append_text_content(const ChatMessage& m, std::string& out) {
  for (const ChatPart& part : m.parts) {
    if (part.kind == ChatPart::Kind::kText) out += part.text;
  }
}

void append_visual_content(const ChatMessage& m, std::string& out) {
  for (const ChatPart& part : m.parts) {
    if (part.kind == ChatPart::Kind::kImage && !m.content_is_string) {
      out += kImagePlaceholder;
    } else if (part.kind == ChatPart::Kind::kVideo && !m.content_is_string) {
      out += kVideoPlaceholder;
    } else {
      out += part.text;
    }
  }
}

void append_tools_header(const std::vector<ChatMessage>& messages,
                         const std::vector<std::string>& tools, std::string& out) {
  out += "<|im_start|>system\n";
  if (messages.front().role == "system") {
    append_text_content(messages.front(), out);
    out += "\n\n";
  }
  out +=
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
  for (const std::string& tool : tools) {
    out += "\n";
    out += tool;
  }
  out +=
      "\n</tools>\n\nFor each function call, return a json object with function name and "
      "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
      "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";
}

void append_tool_calls(const ChatMessage& m, bool had_content, std::string& out) {
  for (size_t i = 0; i < m.tool_calls.size(); ++i) {
    if ((i == 0 && had_content) || i > 0) out += "\n";
    out += "<tool_call>\n{\"name\": \"";
    out += m.tool_calls[i].name;
    out += "\", \"arguments\": ";
    out += m.tool_calls[i].arguments;
    out += "}\n</tool_call>";
  }
}

void append_tool_response(const std::vector<ChatMessage>& messages, size_t index,
                          std::string& out) {
  if (index == 0 || messages[index - 1].role != "tool") out += "<|im_start|>user";
  out += "\n<tool_response>\n";
  append_visual_content(messages[index], out);
  out += "\n</tool_response>";
  if (index + 1 == messages.size() || messages[index + 1].role != "tool") out += "<|im_end|>\n";
}

}  // namespace qvl::chat_parts
