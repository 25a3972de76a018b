// The lifting parse gives json::parse's value and errors on bodies with long strings of every
// kind: plain ASCII (lifted), escaped or non-ASCII (left in place), keys, look-alike placeholders.
#include "server/json_body.h"

#include <gtest/gtest.h>

#include <string>

namespace qvl::server {
namespace {

using nlohmann::json;

std::string long_text(size_t n, char first = 'A') {
  std::string s(n, ' ');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(first + i % 26);
  return s;
}

void expect_same_value(const std::string& body) {
  EXPECT_EQ(parse_json_lifting_long_strings(body), json::parse(body)) << body.substr(0, 80);
  // Key order kept, as structured output needs it.
  EXPECT_EQ(parse_json_lifting_long_strings<nlohmann::ordered_json>(body).dump(),
            nlohmann::ordered_json::parse(body).dump())
      << body.substr(0, 80);
}

TEST(JsonBody, LongStringsGiveTheValueOfAPlainParse) {
  const std::string data = "data:image/png;base64," + long_text(kLiftedStringBytes + 5);
  // A data URI as a chat request carries it, two of them, and one in an array.
  expect_same_value(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":)"
                    R"({"url":")" +
                    data + R"("}},{"type":"text","text":"hi"}]}],"max_tokens":4})");
  expect_same_value(R"({"a":")" + data + R"(","b":[")" + long_text(70000, 'a') + R"(", 3]})");
  // Exactly at the threshold and one byte under it.
  expect_same_value(R"({"a":")" + long_text(kLiftedStringBytes) + R"("})");
  expect_same_value(R"({"a":")" + long_text(kLiftedStringBytes - 1) + R"("})");
  // Escapes and non-ASCII bytes stay for the parser; so does a long key.
  expect_same_value(R"({"a":")" + long_text(kLiftedStringBytes) + R"(\/\"\u00e9"})");
  expect_same_value(R"({"a":"\u00e9)" + long_text(kLiftedStringBytes) + "\xc3\xa9\"}");
  expect_same_value(R"({")" + long_text(kLiftedStringBytes) + R"(" : 1, "b": "x"})");
  // A value that looks like a placeholder stays what it is.
  expect_same_value(R"({"a":")" + long_text(kLiftedStringBytes) +
                    R"(","b":"\u0000qvl-lifted-1-0","c":"\u0000qvl-lifted-"})");
}

TEST(JsonBody, InvalidBodiesFailAsAPlainParseDoes) {
  const std::string big = long_text(kLiftedStringBytes + 1);
  const std::string bodies[] = {
      R"({"a":")" + big + R"(" "b":1})",      // missing comma after a lifted string
      R"({"a":")" + big + R"(", "b": tru})",  // a bad literal after it
      R"({"a":")" + big,                      // unterminated
      R"({"a":")" + big + "\x01\"}",          // a control character inside
      R"({"a":")" + big + "\xff\"}",          // invalid UTF-8 inside
      R"({"a": x")" + big + R"("})",          // garbage before it
  };
  for (const std::string& body : bodies) {
    std::string want;
    try {
      const json accepted = json::parse(body);
      ADD_FAILURE() << "json::parse accepted " << accepted.dump().size() << " bytes";
    } catch (const json::exception& e) {
      want = e.what();
    }
    try {
      const json accepted = parse_json_lifting_long_strings(body);
      ADD_FAILURE() << accepted.size() << "accepted: " << body.substr(body.size() - 20);
    } catch (const json::exception& e) {
      EXPECT_EQ(std::string(e.what()), want);
    }
  }
}

}  // namespace
}  // namespace qvl::server
