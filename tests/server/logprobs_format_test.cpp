#include "server/logprobs_format.h"

#include <gtest/gtest.h>

#include <cmath>

namespace qvl::server {
namespace {

TEST(LogprobsFormat, OpenAiShapeWithExactBytesAndBestEffortText) {
  GeneratedTokenLogprobs first;
  first.token = {100, -0.25, "\xE4\xBD"};  // the first two bytes of U+4F60
  first.top = {{100, -0.25, "\xE4\xBD"}, {7, -INFINITY, "ok"}};
  GeneratedTokenLogprobs second;
  second.token = {101, -1.5, "\xA0 x"};  // the last byte of it, then ASCII
  const nlohmann::json j = logprobs_json({first, second});
  ASSERT_EQ(j["content"].size(), 2u);
  EXPECT_TRUE(j["refusal"].is_null());
  const nlohmann::json& a = j["content"][0];
  EXPECT_EQ(a["token"], "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(a["bytes"], nlohmann::json({0xE4, 0xBD}));
  EXPECT_EQ(a["logprob"], -0.25);
  ASSERT_EQ(a["top_logprobs"].size(), 2u);
  EXPECT_EQ(a["top_logprobs"][1]["token"], "ok");
  EXPECT_EQ(a["top_logprobs"][1]["logprob"], kLogprobFloor);  // JSON has no -infinity
  EXPECT_FALSE(a["top_logprobs"][1].contains("top_logprobs"));
  EXPECT_EQ(j["content"][1]["token"], "\xEF\xBF\xBD x");
  EXPECT_TRUE(j["content"][1]["top_logprobs"].empty());
  // Together the bytes are the text.
  std::string bytes;
  for (const auto& e : j["content"]) {
    for (const auto& b : e["bytes"]) bytes.push_back(static_cast<char>(b.get<int>()));
  }
  EXPECT_EQ(bytes, "\xE4\xBD\xA0 x");
}

TEST(LogprobsFormat, Utf8BestEffortKeepsValidSequencesOnly) {
  EXPECT_EQ(utf8_best_effort("a\xC3\xA9z"), "a\xC3\xA9z");
  EXPECT_EQ(utf8_best_effort("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(utf8_best_effort("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong
  EXPECT_EQ(utf8_best_effort("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(utf8_best_effort("\xF0\x9F"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // cut short
}

}  // namespace
}  // namespace qvl::server
