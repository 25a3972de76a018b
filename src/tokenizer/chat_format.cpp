#include "tokenizer/chat_format.h"

#include "base/error.h"
#include "tokenizer/chat_render_parts.h"

namespace qvl {

namespace {

using namespace chat_parts;

bool is_known_role(const std::string& role) {
  return role == "system" || role == "user" || role == "assistant" || role == "tool";
}

// Qwen3-VL Instruct: reasoning_content is not shown, a system message counts only when first.
std::string render_instruct_chat(const std::vector<ChatMessage>& messages,
                                 const ChatRenderOptions& options) {
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
      out += "<|im_start|>assistant\n";
      append_text_content(m, out);
      append_tool_calls(m, content_is_truthy(m), out);
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      append_tool_response(messages, i, out);
    }
    // "system" is rendered above only when first; the template ignores it elsewhere.
  }
  if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace

const char* chat_template_variant_name(ChatTemplateVariant variant) {
  return variant == ChatTemplateVariant::kThinking ? "Thinking" : "Instruct";
}

std::string render_chat(const std::vector<ChatMessage>& messages,
                        const ChatRenderOptions& options) {
  if (messages.empty()) fail(ErrorCode::kInvalidArgument, "chat has no messages");
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!is_known_role(messages[i].role)) {
      fail(ErrorCode::kInvalidArgument,
           "message " + std::to_string(i) + " has unsupported role \"" + messages[i].role + "\"");
    }
  }
  if (options.variant == ChatTemplateVariant::kThinking) {
    return render_thinking_chat(messages, options);
  }
  return render_instruct_chat(messages, options);
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
