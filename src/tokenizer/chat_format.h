// Qwen3-VL chat format: renders a conversation exactly as the model's Jinja chat template
// (Qwen3-VL Instruct or Thinking, chat_template.json) does, in plain C++; parses OpenAI-style
// messages; checks whether a model folder's template is one this code reproduces.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qvl {

struct ChatPart {
  enum class Kind { kText, kImage, kVideo };  // a video renders its own placeholder
  Kind kind = Kind::kText;
  std::string text;       // kText: the text
  std::string image_ref;  // kImage: URL, data URI or path as given (may be empty)
};

struct ChatToolCall {
  std::string name;
  std::string arguments;  // JSON text, inserted verbatim
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  // true: content was a string, held as a single kText part (no part means "").
  bool content_is_string = true;
  std::vector<ChatPart> parts;
  std::vector<ChatToolCall> tool_calls;  // assistant only
  // Assistant only: the reasoning of that turn (OpenAI-compatible servers' "reasoning_content").
  // Absent and "" differ, as in the template (`is string`). Only the Thinking template shows it.
  std::optional<std::string> reasoning_content;
};

// The two chat templates of the family. Thinking (Qwen3-VL-*-Thinking) opens a <think> block in
// the generation prompt, shows an assistant turn's reasoning only after the last user query, and
// renders system messages wherever they are.
enum class ChatTemplateVariant { kInstruct, kThinking };
const char* chat_template_variant_name(ChatTemplateVariant variant);  // "Instruct", "Thinking"

struct ChatRenderOptions {
  ChatTemplateVariant variant = ChatTemplateVariant::kInstruct;
  bool add_generation_prompt = true;
  // Tool (function) definitions, each already rendered as JSON text (see render_tool_json).
  std::vector<std::string> tools;
};

// The prompt text, e.g. "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Hi"
// "<|im_end|>\n<|im_start|>assistant\n". Each image part renders one <|image_pad|>; the caller
// expands it to the image's token count. Like the template, a system message is rendered only
// when it comes first, and images outside user/tool messages are dropped (parse rejects them).
// Throws Error(kInvalidArgument) for an empty conversation or an unknown role.
std::string render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::string render_chat(const std::vector<ChatMessage>& messages, const ChatRenderOptions& options);
// The Thinking template's rendering (render_chat with that variant calls it after its checks).
// Assistant content null renders as "" (the Jinja template cannot iterate over null).
std::string render_thinking_chat(const std::vector<ChatMessage>& messages,
                                 const ChatRenderOptions& options);

// Image references of the image parts that render_chat turns into pads, in prompt order.
std::vector<std::string> rendered_image_refs(const std::vector<ChatMessage>& messages);

// Parses an OpenAI-style "messages" array. Content is a string, null, or a list of parts:
// {"type":"text","text":...}, {"type":"image_url","image_url":{"url":...}} (or a string),
// {"type":"image","image":...} (Qwen style; the reference may be absent). Assistant
// "tool_calls" and "reasoning_content" (a string or null) are kept. Unknown roles or part types,
// and images outside user/tool messages, throw Error(kInvalidArgument) with the message index in
// the text. The text form refuses JSON nested deeper than kMaxJsonDepth (tokenizer/json_depth.h)
// while reading it.
std::vector<ChatMessage> parse_chat_messages(const nlohmann::ordered_json& messages);
std::vector<ChatMessage> parse_chat_messages_json(std::string_view messages_json);

// A value rendered the way the template's `tojson` filter does (Python json.dumps with
// ensure_ascii=False: ", " and ": " separators, keys in their given order). Throws
// Error(kInvalidArgument) for nesting deeper than kMaxJsonDepth rather than recursing on.
std::string render_tool_json(const nlohmann::ordered_json& value);

// Model-folder chat template check: looks for chat_template.jinja, then chat_template.json
// ("chat_template"), then tokenizer_config.json ("chat_template"), and compares an FNV-1a 64
// hash of the text with the Qwen3-VL templates that render_chat reproduces.
struct ChatTemplateCheck {
  bool found = false;                                            // some template text was present
  bool known = false;                                            // it is one render_chat reproduces
  ChatTemplateVariant variant = ChatTemplateVariant::kInstruct;  // which, when known
  std::string source;                                            // file it came from
  uint64_t hash = 0;
};
ChatTemplateCheck check_chat_template(const std::string& model_dir);
// The same over files given by name ("chat_template.jinja", ...; nullopt when absent), e.g. the
// folder files a pre-packed model carries. source is then the file's name.
using ChatTemplateFileReader = std::function<std::optional<std::string>(const std::string& name)>;
ChatTemplateCheck check_chat_template_in(const ChatTemplateFileReader& read_file);
// The same for template text from elsewhere (a GGUF's tokenizer.chat_template, a packed file).
ChatTemplateCheck check_chat_template_text(std::string_view template_text);
// The variant a model's template text asks for: Thinking when it is the known Thinking template,
// else Instruct (an unknown template is rendered as Instruct, with a warning from the loader).
ChatTemplateVariant chat_template_variant(std::string_view template_text);
// false when the template is missing or differs, so the caller can warn.
bool is_known_chat_template(const std::string& model_dir);
uint64_t chat_template_hash(std::string_view template_text);

}  // namespace qvl
