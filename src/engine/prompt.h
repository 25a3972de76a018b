// Conversation -> token ids: the model's chat template, BPE, and each image's single pad
// expanded to the number of tokens its grid produces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "qvl/engine.h"
#include "tokenizer/chat_format.h"
#include "tokenizer/tokenizer.h"

namespace qvl {

// The chat template's text (with one <|image_pad|> per image part), generation prompt added;
// with tools, the template's tools header (each tool rendered as its `tojson` filter does) and
// the history's tool calls and tool results.
std::string render_prompt(const std::vector<Message>& messages,
                          const std::vector<ToolDefinition>& tools = {},
                          ChatTemplateVariant variant = ChatTemplateVariant::kInstruct);

// Token ids with image pads expanded: image k (in order of appearance) gets image_tokens[k]
// pads. Throws if the number of image parts differs from image_tokens.size(), including when
// message text itself spells an image pad.
std::vector<int64_t> prompt_token_ids(const Tokenizer& tokenizer, const ModelConfig& config,
                                      const std::string& prompt_text,
                                      const std::vector<int64_t>& image_tokens);

// Index of each image part in order of appearance in the messages (ContentPart::image_index).
std::vector<int> image_order(const std::vector<Message>& messages);

}  // namespace qvl
