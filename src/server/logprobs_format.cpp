#include "server/logprobs_format.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace qvl::server {
namespace {

using nlohmann::json;

// Length of the valid UTF-8 sequence at text[i], or 0 when it is not one (RFC 3629: no
// overlongs, no surrogates, nothing above U+10FFFF).
size_t valid_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

json token_json(const TokenLogprob& t) {
  json bytes = json::array();
  for (char c : t.bytes) bytes.push_back(static_cast<uint8_t>(c));
  const double logprob =
      std::isfinite(t.logprob) ? std::max(t.logprob, kLogprobFloor) : kLogprobFloor;
  return {{"token", utf8_best_effort(t.bytes)}, {"logprob", logprob}, {"bytes", bytes}};
}

}  // namespace

std::string utf8_best_effort(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const size_t length = valid_sequence_length(bytes, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(bytes.substr(i, length));
      i += length;
    }
  }
  return out;
}

json logprobs_json(const std::vector<GeneratedTokenLogprobs>& tokens) {
  json content = json::array();
  for (const GeneratedTokenLogprobs& t : tokens) {
    json entry = token_json(t.token);
    json top = json::array();
    for (const TokenLogprob& alternative : t.top) top.push_back(token_json(alternative));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

}  // namespace qvl::server
