// Byte-level behaviour of compiled schemas: what each keyword accepts and rejects, and which
// keywords are refused.
#include <gtest/gtest.h>

#include "base/error.h"
#include "grammar/matcher.h"
#include "grammar/schema_compiler.h"

namespace qvl::grammar {
namespace {

using nlohmann::ordered_json;

std::shared_ptr<const Grammar> compile(const char* schema) {
  return compile_json_schema(ordered_json::parse(schema));
}

bool accepts(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g);
  return m.advance(text) && m.accepting();
}

// A prefix the grammar allows (it may continue), without being complete.
bool allows_prefix(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g);
  return m.advance(text);
}

std::string refusal(const char* schema) {
  try {
    compile(schema);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SchemaGrammar, ObjectPropertiesInOrderWithRequiredAndOptional) {
  const auto g = compile(R"({"type":"object","properties":{"a":{"type":"integer"},
      "b":{"type":"string"},"c":{"type":"boolean"}},"required":["a","c"],
      "additionalProperties":false})");
  EXPECT_TRUE(accepts(g, R"({"a":1,"c":true})"));
  EXPECT_TRUE(accepts(g, R"({"a": 1, "b": "x", "c": false})"));
  EXPECT_TRUE(accepts(g, "{\n  \"a\": -12,\n  \"c\": true\n}"));
  EXPECT_FALSE(accepts(g, R"({"a":1})"));                 // c is required
  EXPECT_FALSE(allows_prefix(g, R"({"c":true)"));         // schema order: a first
  EXPECT_FALSE(allows_prefix(g, R"({"a":1,"d")"));        // no other keys
  EXPECT_FALSE(allows_prefix(g, R"({"a":1.5)"));          // integer
  EXPECT_FALSE(allows_prefix(g, R"({"a":1,"c":true,)"));  // nothing left to add
  EXPECT_FALSE(accepts(g, R"({"a":1,"c":true} )"));       // nothing after the value
}

TEST(SchemaGrammar, FreeObjectsAndMaps) {
  const auto any = json_object_grammar();
  EXPECT_TRUE(accepts(any, R"({"x":[1,{"y":null}],"z":"\u00e9\n"})"));
  EXPECT_TRUE(accepts(any, "{}"));
  EXPECT_FALSE(allows_prefix(any, "["));  // json_object: an object at the top
  EXPECT_FALSE(allows_prefix(any, R"({"a":01)"));
  const auto map = compile(R"({"type":"object","additionalProperties":{"type":"number"}})");
  EXPECT_TRUE(accepts(map, R"({"k":1e5,"j":-0.5})"));
  EXPECT_FALSE(allows_prefix(map, R"({"k":")"));
  EXPECT_TRUE(accepts(compile(R"({"type":"object","additionalProperties":false})"), "{}"));
}

TEST(SchemaGrammar, ArraysCountItems) {
  const auto g =
      compile(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
  EXPECT_FALSE(accepts(g, "[1]"));
  EXPECT_TRUE(accepts(g, "[1,2]"));
  EXPECT_TRUE(accepts(g, "[1, 2, 3]"));
  EXPECT_FALSE(allows_prefix(g, "[1,2,3,"));
  EXPECT_FALSE(allows_prefix(g, "[]"));
  EXPECT_TRUE(accepts(compile(R"({"type":"array"})"), R"([1,"a",[true]])"));
}

TEST(SchemaGrammar, StringsEnumsAndConst) {
  const auto e = compile(R"({"type":"string","enum":["red","green","reed"]})");
  EXPECT_TRUE(accepts(e, R"("red")"));
  EXPECT_TRUE(accepts(e, R"("reed")"));
  EXPECT_FALSE(allows_prefix(e, R"("ro)"));
  EXPECT_TRUE(accepts(compile(R"({"const":{"a":[1,2]}})"), R"({"a":[1,2]})"));
  const auto mixed = compile(R"({"enum":[1,10,"x",null]})");
  EXPECT_TRUE(accepts(mixed, "1"));
  EXPECT_TRUE(accepts(mixed, "10"));
  EXPECT_TRUE(accepts(mixed, "null"));
  EXPECT_FALSE(accepts(mixed, "11"));
  const auto s = compile(R"({"type":"string"})");
  EXPECT_TRUE(accepts(s, R"("a\"b\\c\u12aF \u00e9 日本")"));
  EXPECT_FALSE(allows_prefix(s, "\"a\nb"));        // raw control character
  EXPECT_FALSE(allows_prefix(s, R"("\x)"));        // bad escape
  EXPECT_FALSE(allows_prefix(s, "\"\x80"));        // lone continuation byte
  EXPECT_FALSE(allows_prefix(s, "\"\xE6\x97\""));  // cut-off character
}

TEST(SchemaGrammar, Formats) {
  const auto date = compile(R"({"type":"string","format":"date"})");
  EXPECT_TRUE(accepts(date, R"("2024-02-29")"));
  EXPECT_FALSE(allows_prefix(date, R"("2023-02-29)"));  // not a leap year
  EXPECT_FALSE(allows_prefix(date, R"("2023-13)"));
  EXPECT_FALSE(allows_prefix(date, R"("2023-04-31)"));
  EXPECT_TRUE(
      accepts(compile(R"({"type":"string","format":"date-time"})"), R"("1999-12-31T23:59:59Z")"));
  EXPECT_FALSE(allows_prefix(compile(R"({"type":"string","format":"time"})"), R"("24)"));
  EXPECT_TRUE(accepts(compile(R"({"type":"string","format":"uuid"})"),
                      R"("123e4567-e89b-12d3-a456-426614174000")"));
}

TEST(SchemaGrammar, NumbersBooleansNull) {
  const auto n = compile(R"({"type":"number"})");
  for (const char* ok : {"0", "-0.5", "12e-3", "1E+9", "3.25"}) EXPECT_TRUE(accepts(n, ok)) << ok;
  for (const char* bad : {"01", "-", "1.", ".5", "1e", "+1"}) EXPECT_FALSE(accepts(n, bad)) << bad;
  EXPECT_FALSE(allows_prefix(n, "1234567890123456"));  // digit runs are bounded
  EXPECT_TRUE(accepts(compile(R"({"type":"boolean"})"), "false"));
  EXPECT_TRUE(accepts(compile(R"({"type":"null"})"), "null"));
}

TEST(SchemaGrammar, AnyOfTypeArraysNullable) {
  const auto g =
      compile(R"({"anyOf":[{"type":"string"},{"type":"array","items":{"type":"null"}}]})");
  EXPECT_TRUE(accepts(g, R"("s")"));
  EXPECT_TRUE(accepts(g, "[null,null]"));
  EXPECT_FALSE(accepts(g, "1"));
  const auto t = compile(R"({"type":["integer","null"]})");
  EXPECT_TRUE(accepts(t, "7"));
  EXPECT_TRUE(accepts(t, "null"));
  EXPECT_TRUE(accepts(compile(R"({"type":"string","nullable":true})"), "null"));
}

TEST(SchemaGrammar, LocalReferencesAndRecursion) {
  const auto g = compile(R"({"$defs":{"node":{"type":"object","properties":{
      "v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["v"]}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(accepts(g, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]})"));
  EXPECT_FALSE(accepts(g, R"({"v":1,"kids":[{}]})"));
  const auto root =
      compile(R"({"type":"array","items":{"anyOf":[{"type":"integer"},{"$ref":"#"}]}})");
  EXPECT_TRUE(accepts(root, "[1,[2,[]]]"));
}

TEST(SchemaGrammar, RefusesWhatItCannotEnforce) {
  EXPECT_NE(refusal(R"({"type":"string","pattern":"a+"})").find("'pattern'"), std::string::npos);
  EXPECT_NE(
      refusal(R"({"properties":{"x":{"type":"string","minLength":2}}})").find("/properties/x"),
      std::string::npos);
  EXPECT_NE(refusal(R"({"oneOf":[{"type":"string"}]})").find("'oneOf'"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"string","format":"email"})").find("email"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref":"http://x/y"})").find("local"), std::string::npos);
  EXPECT_NE(refusal(R"({"enum":[]})"), "");
  EXPECT_NE(refusal(R"({"type":"array","minItems":3,"maxItems":1})"), "");
  EXPECT_NE(refusal(R"({"type":"object","properties":{"a":{}},"required":["b"]})"), "");
  EXPECT_NE(refusal(R"({"type":"number","minimum":0})").find("'minimum'"), std::string::npos);
  // A required property that contains itself has no finite value.
  EXPECT_NE(refusal(R"({"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]})"), "");
  EXPECT_EQ(refusal(R"({"title":"T","description":"d","type":"integer","default":1})"), "");
}

TEST(SchemaGrammar, ToolCallWrapper) {
  const auto g = tool_call_grammar(
      {{"get_weather", ordered_json::parse(R"({"type":"object","properties":{"city":
          {"type":"string"}},"required":["city"]})")},
       {"now", nullptr}},
      2);
  EXPECT_TRUE(accepts(g,
                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                      "\"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(accepts(g,
                      "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n"
                      "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(allows_prefix(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}"));
  EXPECT_FALSE(allows_prefix(g, "<tool_call>\n{\"name\": \"other"));
  EXPECT_FALSE(allows_prefix(g, "Sure"));
}

TEST(SchemaGrammar, DistanceIsTheShortestCompletion) {
  const auto g = compile(R"({"type":"object","properties":{"a":{"type":"string","format":"date"},
      "b":{"type":"array","items":{"type":"integer"},"minItems":2}},"required":["a","b"]})");
  Matcher m(g);
  const std::string shortest = R"({"a":"2000-01-01","b":[0,0]})";
  EXPECT_EQ(m.distance(), static_cast<int64_t>(shortest.size()));
  for (size_t i = 0; i < shortest.size(); ++i) {
    ASSERT_TRUE(m.advance(shortest.substr(i, 1)));
    EXPECT_EQ(m.distance(), static_cast<int64_t>(shortest.size() - i - 1)) << i;
  }
  EXPECT_TRUE(m.finished());
}

}  // namespace
}  // namespace qvl::grammar
