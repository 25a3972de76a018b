// Response bodies in OpenAI's exact wire format: chat.completion objects and the
// chat.completion.chunk events of a streamed answer (Server-Sent Events).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "qvl/engine.h"
#include "server/reasoning_split.h"

namespace qvl::server {

// What every object of one completion shares.
struct CompletionIdentity {
  std::string id;  // "chatcmpl-..."
  int64_t created = 0;
  std::string model;
};

CompletionIdentity new_completion_identity(const std::string& model);

const char* finish_reason_name(FinishReason reason);

nlohmann::json usage_json(const GenerationStats& stats);
// qvl's addition (llama.cpp has the same idea): where the time went.
nlohmann::json timings_json(const GenerationStats& stats);

// With parse_tool_calls, <tool_call> blocks of the answer become message.tool_calls (content null
// when nothing else was said) and a stop becomes finish_reason "tool_calls". With with_logprobs:
// choices[0].logprobs from result.logprobs (else null). `reasoning` other than kRaw: the text is
// a Thinking model's (reasoning_split.h); the answer after "</think>" is content (null when it
// never began) and, with kSplit, the reasoning is message.reasoning_content (null when empty).
// Tool calls are looked for in the answer only.
nlohmann::json completion_json(const CompletionIdentity& identity, const GenerationResult& result,
                               bool parse_tool_calls = false, bool with_logprobs = false,
                               ReasoningOutput reasoning = ReasoningOutput::kRaw);

// A chat.completion with these choices (e.g. one per page of a per-page document request) and
// `stats` as its usage and timings.
nlohmann::json completion_with_choices(const CompletionIdentity& identity, nlohmann::json choices,
                                       const GenerationStats& stats);

// One chat.completion.chunk. `with_usage_field` adds "usage": null, as OpenAI does on every
// chunk when stream_options.include_usage is set.
// `logprobs`: the choice's logprobs object (see logprobs_format.h), null when not asked for.
nlohmann::json chunk_json(const CompletionIdentity& identity, const nlohmann::json& delta,
                          const char* finish_reason, bool with_usage_field,
                          const nlohmann::json& logprobs = nullptr);
// The last chunk of a stream that asked for usage: empty choices, usage and timings.
nlohmann::json usage_chunk_json(const CompletionIdentity& identity, const GenerationStats& stats);

// "data: <json>\n\n"
std::string sse_event(const nlohmann::json& data);
// "data: [DONE]\n\n"
std::string sse_done();

}  // namespace qvl::server
