// The Qwen3-VL-*-Thinking chat template in C++
// (tests/tokenizer/qwen3vl_thinking_chat_template.jinja is the Jinja text;
// thinking_template_cases.json its renderings). The string functions below are the Python ones the
// template calls (str.split, strip('\n'), ...).
#include <string_view>

#include "tokenizer/chat_format.h"
#include "tokenizer/chat_render_parts.h"

namespace qvl {

namespace {

using namespace chat_parts;

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

std::string lstrip_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return std::string(s);
}

std::string rstrip_newlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return std::string(s);
}

std::string strip_newlines(std::string_view s) {
  return lstrip_newlines(rstrip_newlines(s));
}

// s.split(sep)[0] and s.split(sep)[-1].
std::string_view before_first(std::string_view s, std::string_view sep) {
  const size_t at = s.find(sep);
  return at == std::string_view::npos ? s : s.substr(0, at);
}
std::string_view after_last(std::string_view s, std::string_view sep) {
  const size_t at = s.rfind(sep);
  return at == std::string_view::npos ? s : s.substr(at + sep.size());
}

// The template's render_content macro: text and image placeholders, for every role.
std::string content_of(const ChatMessage& m) {
  std::string out;
  append_visual_content(m, out);
  return out;
}

// The last user message that is a real query, not tool output the client sent as a user turn;
// the last message when there is none. Reasoning of assistant turns before it is dropped.
size_t last_query_index(const std::vector<ChatMessage>& messages) {
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role != "user") continue;
    const std::string content = content_of(messages[i]);
    const bool tool_output =
        content.starts_with("<tool_response>") && content.ends_with("</tool_response>");
    if (!tool_output) return i;
  }
  return messages.size() - 1;
}

void append_assistant(const std::vector<ChatMessage>& messages, size_t index, size_t last_query,
                      std::string& out) {
  const ChatMessage& m = messages[index];
  std::string content = content_of(m);
  std::string reasoning;
  if (m.reasoning_content) {
    reasoning = *m.reasoning_content;
  } else if (content.find(kClose) != std::string::npos) {
    reasoning = lstrip_newlines(after_last(rstrip_newlines(before_first(content, kClose)), kOpen));
    content = lstrip_newlines(after_last(content, kClose));
  }
  const bool is_last = index + 1 == messages.size();
  out += "<|im_start|>assistant\n";
  if (index > last_query && (is_last || !reasoning.empty())) {
    out += "<think>\n" + strip_newlines(reasoning) + "\n</think>\n\n" + lstrip_newlines(content);
  } else {
    out += content;
  }
  append_tool_calls(m, !content.empty(), out);
  out += "<|im_end|>\n";
}

}  // namespace

std::string render_thinking_chat(const std::vector<ChatMessage>& messages,
                                 const ChatRenderOptions& options) {
  std::string out;
  if (!options.tools.empty()) {
    append_tools_header(messages, options.tools, out);
  } else if (messages.front().role == "system") {
    out += "<|im_start|>system\n" + content_of(messages.front()) + "<|im_end|>\n";
  }
  const size_t last_query = last_query_index(messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i > 0)) {
      out += "<|im_start|>" + m.role + "\n" + content_of(m) + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      append_assistant(messages, i, last_query, out);
    } else if (m.role == "tool") {
      append_tool_response(messages, i, out);
    }
  }
  if (options.add_generation_prompt) out += "<|im_start|>assistant\n<think>\n";
  return out;
}

}  // namespace qvl
