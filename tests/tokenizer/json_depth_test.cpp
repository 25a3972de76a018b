// Nesting limits on JSON read from files and on the template's tojson renderer: deep input must
// end in a clear error, never a stack overflow.
#include "tokenizer/json_depth.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "base/error.h"
#include "tokenizer/chat_format.h"

namespace qvl {
namespace {

using nlohmann::ordered_json;

std::string nested_arrays(int levels) {
  return std::string(static_cast<size_t>(levels), '[') +
         std::string(static_cast<size_t>(levels), ']');
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(JsonDepth, AcceptsTheLimitAndRefusesOneMore) {
  EXPECT_NO_THROW(parse_json_within_depth<ordered_json>(nested_arrays(kMaxJsonDepth)));
  EXPECT_NE(error_of([] {
              parse_json_within_depth<nlohmann::json>(nested_arrays(kMaxJsonDepth + 1));
            }).find("nested deeper than 64 levels"),
            std::string::npos);
  // Objects count as levels too, and a smaller limit is honoured.
  const std::string objects = R"({"a": {"b": {"c": 1}}})";
  EXPECT_NO_THROW(parse_json_within_depth<nlohmann::json>(objects, 3));
  EXPECT_NE(error_of([&] {
              parse_json_within_depth<nlohmann::json>(objects, 2);
            }).find("deeper than 2 levels"),
            std::string::npos);
  // Not JSON at all is still nlohmann's parse error, for the caller to word.
  EXPECT_THROW(parse_json_within_depth<nlohmann::json>("[1,"), nlohmann::json::parse_error);
}

TEST(JsonDepth, RefusesAMillionLevelsWhileReading) {
  // A tree this deep would overflow the stack when copied or dumped; it must never be built.
  const std::string deep = std::string(1000000, '[');
  EXPECT_NE(error_of([&] { parse_json_within_depth<ordered_json>(deep); }).find("nested deeper"),
            std::string::npos);
}

TEST(JsonDepth, MessagesFileTextIsBounded) {
  const std::string deep_arguments =
      R"([{"role": "assistant", "content": null, "tool_calls": [{"function": )"
      R"({"name": "f", "arguments": )" +
      nested_arrays(100000) + "}}]}]";
  EXPECT_NE(error_of([&] { parse_chat_messages_json(deep_arguments); }).find("nested deeper"),
            std::string::npos);
  // Within the limit, object arguments are rendered as the template's tojson does.
  const auto messages = parse_chat_messages_json(
      R"([{"role": "assistant", "content": null, "tool_calls": [{"function": )"
      R"({"name": "f", "arguments": {"x": [[1]]}}}]}])");
  ASSERT_EQ(messages.at(0).tool_calls.size(), 1u);
  EXPECT_EQ(messages[0].tool_calls[0].arguments, "{\"x\": [[1]]}");
}

TEST(JsonDepth, TojsonRefusesATreeBuiltTooDeepInMemory) {
  // Built level by level (moves only: copying such a tree would itself recurse).
  ordered_json value = 1;
  for (int i = 0; i < 200000; ++i) {
    ordered_json outer = ordered_json::array();
    outer.push_back(std::move(value));
    value = std::move(outer);
  }
  EXPECT_NE(error_of([&] { render_tool_json(value); }).find("nested deeper"), std::string::npos);
  ordered_json shallow = 1;
  for (int i = 0; i < kMaxJsonDepth; ++i) {
    ordered_json outer = ordered_json::object();
    outer["k"] = std::move(shallow);
    shallow = std::move(outer);
  }
  EXPECT_EQ(render_tool_json(shallow).size(), 64u * 7 + 1);  // {"k": ... } per level
}

}  // namespace
}  // namespace qvl
