#include "engine/prompt.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "tokenizer/chat_format.h"

namespace qvl {

std::vector<int> image_order(const std::vector<Message>& messages) {
  std::vector<int> order;
  for (const auto& m : messages)
    for (const auto& p : m.parts)
      if (p.kind == ContentPart::Kind::kImage) order.push_back(p.image_index);
  return order;
}

std::string render_prompt(const std::vector<Message>& messages,
                          const std::vector<ToolDefinition>& tools, ChatTemplateVariant variant) {
  std::vector<ChatMessage> chat;
  for (const auto& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
      fail(ErrorCode::kInvalidArgument,
           "unknown role '" + m.role + "' (use system, user, assistant or tool)");
    }
    ChatMessage c;
    c.role = m.role;
    c.content_is_string = m.content_is_string;
    for (const auto& p : m.parts) {
      ChatPart part;
      part.kind = p.kind == ContentPart::Kind::kImage   ? ChatPart::Kind::kImage
                  : p.kind == ContentPart::Kind::kVideo ? ChatPart::Kind::kVideo
                                                        : ChatPart::Kind::kText;
      part.text = p.text;
      c.parts.push_back(std::move(part));
    }
    c.reasoning_content = m.reasoning_content;
    for (const ToolCall& call : m.tool_calls) {
      std::string arguments = call.arguments;
      if (call.arguments_are_value) {
        const auto value = nlohmann::ordered_json::parse(call.arguments, nullptr, false);
        if (value.is_discarded()) {
          fail(ErrorCode::kInvalidArgument,
               "tool call arguments of " + call.name + " are not valid JSON");
        }
        arguments = render_tool_json(value);
      }
      c.tool_calls.push_back({call.name, arguments});
    }
    chat.push_back(std::move(c));
  }
  ChatRenderOptions options;
  options.variant = variant;
  for (const ToolDefinition& tool : tools) {
    nlohmann::ordered_json value;
    try {
      value = nlohmann::ordered_json::parse(tool.json);
    } catch (const nlohmann::ordered_json::exception& e) {
      fail(ErrorCode::kInvalidArgument, "tool " + tool.name + " is not valid JSON: " + e.what());
    }
    options.tools.push_back(render_tool_json(value));
  }
  return render_chat(chat, options);
}

std::vector<int64_t> prompt_token_ids(const Tokenizer& tokenizer, const ModelConfig& config,
                                      const std::string& prompt_text,
                                      const std::vector<int64_t>& image_tokens) {
  const std::vector<int32_t> ids = tokenizer.encode(prompt_text);
  std::vector<int64_t> out;
  size_t image = 0;
  for (int32_t id : ids) {
    if (id != config.image_token_id) {
      out.push_back(id);
      continue;
    }
    if (image >= image_tokens.size()) {
      fail(ErrorCode::kInvalidArgument,
           "the prompt has more image placeholders than images (does the text contain "
           "'<|image_pad|>'?)");
    }
    out.insert(out.end(), static_cast<size_t>(image_tokens[image++]), config.image_token_id);
  }
  if (image != image_tokens.size()) {
    fail(ErrorCode::kInvalidArgument, "the prompt has fewer image placeholders than images");
  }
  return out;
}

}  // namespace qvl
