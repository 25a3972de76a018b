// Pieces both Qwen3-VL chat templates (Instruct and Thinking) render the same way.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/chat_format.h"

namespace qvl::chat_parts {

inline constexpr const char* kImagePlaceholder = "<|vision_start|><|image_pad|><|vision_end|>";
inline constexpr const char* kVideoPlaceholder = "<|vision_start|><|video_pad|><|vision_end|>";

// `message.content` truthiness in Jinja: a non-empty string or a non-empty list.
bool content_is_truthy(const ChatMessage& m);

// Only the text parts of the content (Instruct's system and assistant messages).
void append_text_content(const ChatMessage& m, std::string& out);

// Text parts and image placeholders in order (user and tool messages; every message in the
// Thinking template, whose render_content macro does this for all roles).
void append_visual_content(const ChatMessage& m, std::string& out);

// The system turn that lists the tools, with the first message's text first if it is a system one.
void append_tools_header(const std::vector<ChatMessage>& messages,
                         const std::vector<std::string>& tools, std::string& out);

// "<tool_call>\n{...}\n</tool_call>" blocks; the first one on a new line when there was content.
void append_tool_calls(const ChatMessage& m, bool had_content, std::string& out);

// A tool result: consecutive ones share one user turn.
void append_tool_response(const std::vector<ChatMessage>& messages, size_t index, std::string& out);

}  // namespace qvl::chat_parts
