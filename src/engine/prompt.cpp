#include "engine/prompt.h"

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

std::string render_prompt(const std::vector<Message>& messages) {
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
      part.kind =
          p.kind == ContentPart::Kind::kImage ? ChatPart::Kind::kImage : ChatPart::Kind::kText;
      part.text = p.text;
      c.parts.push_back(std::move(part));
    }
    chat.push_back(std::move(c));
  }
  return render_chat(chat, /*add_generation_prompt=*/true);
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
