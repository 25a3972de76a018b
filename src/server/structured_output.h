// The structured-output fields of a chat request: response_format (json_object, json_schema),
// tools, tool_choice, parallel_tool_calls, and the tool fields of messages (assistant tool_calls,
// tool_call_id). Schemas are checked here, so a keyword qvl cannot enforce is a 400 naming it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/chat_request.h"

namespace qvl::server {

// Reads the request's response_format / tools / tool_choice into out.generation.constraint and
// out.generation.tools (and out.parse_tool_calls). `body` is read again with key order kept:
// the prompt shows tools as the client wrote them, and objects are generated in schema order.
void parse_structured_output(std::string_view body, const nlohmann::json& request,
                             ChatRequest& out);

// tool_calls of an assistant message of the history, tool_call_id of a tool message.
void parse_message_tool_fields(const nlohmann::json& message, const std::string& param,
                               Message& out);

}  // namespace qvl::server
