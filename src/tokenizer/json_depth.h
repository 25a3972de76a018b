// JSON read from files (`qvl run --messages`, `qvl batch --requests`) with a bound on nesting
// that holds while reading. nlohmann's parser is iterative, but copying, dumping and rendering a
// tree recurse once per level, so a file of a million '[' must be refused before its tree exists.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/error.h"

namespace qvl {

// The deepest nesting of arrays and objects accepted (the server's default body limit too).
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`; throws Error(kInvalidArgument) "JSON is nested deeper than N levels" as soon as
// the parser opens level N + 1, and nlohmann's parse_error for text that is not JSON.
template <class Json>
Json parse_json_within_depth(std::string_view text, int max_depth = kMaxJsonDepth) {
  // The callback sees the depth of the container being opened, 0 for the outermost one.
  return Json::parse(text, [max_depth](int depth, nlohmann::json::parse_event_t event, Json&) {
    const bool opens = event == nlohmann::json::parse_event_t::object_start ||
                       event == nlohmann::json::parse_event_t::array_start;
    if (opens && depth >= max_depth) {
      fail(ErrorCode::kInvalidArgument,
           "JSON is nested deeper than " + std::to_string(max_depth) + " levels");
    }
    return true;
  });
}

}  // namespace qvl
