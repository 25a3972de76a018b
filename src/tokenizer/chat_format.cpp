#include "tokenizer/chat_format.h"

#include "base/error.h"

namespace qvl {

namespace {

constexpr std::string_view kImagePlaceholder = "<|vision_start|><|image_pad|><|vision_end|>";

bool is_known_role(const std::string& role) {
  return role == "system" || role == "user" || role == "assistant" || role == "tool";
}

// `message.content` truthiness in Jinja: a non-empty string or a non-empty list.
bool content_is_truthy(const ChatMessage& m) {
  if (!m.content_is_string) return !m.parts.empty();
  return !m.parts.empty() && !m.parts.front().text.empty();
}

// System and assistant content: a string, or only the text parts of a list.
void append_text_content(const ChatMessage& m, std::string& out) {
  for (const ChatPart& part : m.parts) {
    if (part.kind == ChatPart::Kind::kText) out += part.text;
  }
}

// User and tool content: text parts and image placeholders in order.
void append_visual_content(const ChatMessage& m, std::string& out) {
  for (const ChatPart& part : m.parts) {
    if (part.kind == ChatPart::Kind::kImage && !m.content_is_string) {
      out += kImagePlaceholder;
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

void append_assistant(const ChatMessage& m, std::string& out) {
  out += "<|im_start|>assistant\n";
  append_text_content(m, out);
  for (size_t i = 0; i < m.tool_calls.size(); ++i) {
    if ((i == 0 && content_is_truthy(m)) || i > 0) out += "\n";
    out += "<tool_call>\n{\"name\": \"";
    out += m.tool_calls[i].name;
    out += "\", \"arguments\": ";
    out += m.tool_calls[i].arguments;
    out += "}\n</tool_call>";
  }
  out += "<|im_end|>\n";
}

}  // namespace

std::string render_chat(const std::vector<ChatMessage>& messages,
                        const ChatRenderOptions& options) {
  if (messages.empty()) fail(ErrorCode::kInvalidArgument, "chat has no messages");
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!is_known_role(messages[i].role)) {
      fail(ErrorCode::kInvalidArgument,
           "message " + std::to_string(i) + " has unsupported role \"" + messages[i].role + "\"");
    }
  }
  std::string out;
  if (!options.tools.empty()) {
    append_tools_header(messages, options.tools, out);
  } else if (messages.front().role == "system") {
    out += "<|im_start|>system\n";
    append_text_content(messages.front(), out);
    out += "<|im_end|>\n";
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      out += "<|im_start|>user\n";
      append_visual_content(m, out);
      out += "<|im_end|>\n";
    } else if (m.role == "assistant") {
      append_assistant(m, out);
    } else if (m.role == "tool") {
      // Consecutive tool results share one user turn.
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n";
      append_visual_content(m, out);
      out += "\n</tool_response>";
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
    // "system" is rendered above only when first; the template ignores it elsewhere.
  }
  if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  ChatRenderOptions options;
  options.add_generation_prompt = add_generation_prompt;
  return render_chat(messages, options);
}

std::vector<std::string> rendered_image_refs(const std::vector<ChatMessage>& messages) {
  std::vector<std::string> refs;
  for (const ChatMessage& m : messages) {
    if ((m.role != "user" && m.role != "tool") || m.content_is_string) continue;
    for (const ChatPart& part : m.parts) {
      if (part.kind == ChatPart::Kind::kImage) refs.push_back(part.image_ref);
    }
  }
  return refs;
}

}  // namespace qvl
