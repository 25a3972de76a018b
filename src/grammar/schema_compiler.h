// JSON Schema -> Grammar, for structured outputs and tool calls.
//
// Supported: type (one or an array, so nullable types), properties / required /
// additionalProperties (false, true or absent: only declared properties are generated, in schema
// order; an object without properties is free, or a map when additionalProperties is a schema),
// items / minItems / maxItems, enum, const, anyOf, allOf with one member, nullable, format
// (date, time, date-time, uuid), local $ref into $defs / definitions / the root, boolean schemas,
// and annotations (title, description, default, examples, ...). Any other keyword is refused with
// Error(kInvalidArgument) naming it and its location, never ignored.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace qvl::grammar {

std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::ordered_json& schema);

// Any JSON object (OpenAI's response_format {"type": "json_object"}).
std::shared_ptr<const Grammar> json_object_grammar();

struct ToolSchema {
  std::string name;
  nlohmann::ordered_json parameters;  // null: any object
};

// Qwen's tool-call format: 1..max_calls blocks "<tool_call>\n{"name": N, "arguments": A}\n
// </tool_call>" separated by newlines, where N is one of the tools and A matches its parameters.
std::shared_ptr<const Grammar> tool_call_grammar(const std::vector<ToolSchema>& tools,
                                                 int max_calls);

}  // namespace qvl::grammar
