// libFuzzer target: any bytes as an OpenAI-style messages array (`qvl run --messages`, tool-call
// arguments rendered by the template's tojson). Parsing must give messages that render, or throw
// qvl::Error; never crash or recurse without bound.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.h"
#include "tokenizer/chat_format.h"
#include "tokenizer/json_depth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto messages = qvl::parse_chat_messages_json(text);
    (void)qvl::render_chat(messages, true);
    qvl::ChatRenderOptions thinking;  // the Thinking template's reasoning and <think> handling
    thinking.variant = qvl::ChatTemplateVariant::kThinking;
    (void)qvl::render_chat(messages, thinking);
    (void)qvl::rendered_image_refs(messages);
  } catch (const qvl::Error&) {
  }
  // The same bytes as a tool definition or arguments object, through tojson.
  try {
    (void)qvl::render_tool_json(qvl::parse_json_within_depth<nlohmann::ordered_json>(text));
  } catch (const nlohmann::ordered_json::exception&) {
  } catch (const qvl::Error&) {
  }
  return 0;
}
