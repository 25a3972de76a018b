// What one `chat.completion.chunk` of a streamed answer tells the load generator: its text, how
// many generated tokens it stands for, finish reason and usage, recorded into a ChatStreamResult
// at the time its bytes arrived.
#pragma once

#include <string>
#include <vector>

#include "cli/chat_stream_client.h"

namespace qvl::cli {

// The message of an OpenAI error object, or the raw text (cut to 300 bytes) when it is not one.
std::string error_message(const std::string& body);

// Reads one SSE event's data (a JSON chunk or an error object; not "[DONE]") into `result`, timed
// `at`. A chunk is a token arrival when it has text or log-probability entries: tokens without
// text (bytes of a character still incomplete, ids with no text) reach a client only as the
// latter, so with "logprobs" every generated token is seen. Returns true if this chunk carried
// the answer's first text.
bool read_stream_event(const std::string& data, double at, ChatStreamResult& result);

// Tokens per second of all streams together while every one of them decodes: from the last
// stream's first token to the first stream's last token (the batch's decode speed, without the
// other streams' prefills); NaN when that window holds fewer than 4 tokens per stream.
double steady_decode_rate(const std::vector<ChatStreamResult>& streams);

}  // namespace qvl::cli
