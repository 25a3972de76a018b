// OpenAI's choices[].logprobs object from the engine's per-token log-probabilities:
// {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}],
//  "refusal": null}. A token that holds only part of a UTF-8 character has its exact bytes in
// "bytes" and a best-effort "token" string (invalid bytes become U+FFFD).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "qvl/engine.h"

namespace qvl::server {

// OpenAI reports this for tokens the model rules out (JSON has no -infinity).
constexpr double kLogprobFloor = -9999.0;

nlohmann::json logprobs_json(const std::vector<GeneratedTokenLogprobs>& tokens);

// Valid UTF-8: each byte that does not start a complete, valid sequence becomes U+FFFD.
std::string utf8_best_effort(std::string_view bytes);

}  // namespace qvl::server
