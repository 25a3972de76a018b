#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace qvl {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, SanitizeUsesMaximalSubparts) {
  EXPECT_EQ(sanitize_utf8("abc"), "abc");
  EXPECT_EQ(sanitize_utf8(""), "");
  EXPECT_EQ(sanitize_utf8("\xFF"), kFffd);
  EXPECT_EQ(sanitize_utf8("\xE2\x82"), kFffd);  // one truncated character
  EXPECT_EQ(sanitize_utf8("\xE2\x82"
                          "A"),
            kFffd + "A");
  EXPECT_EQ(sanitize_utf8("\xC0\x80"), kFffd + kFffd);              // overlong: two bytes
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(sanitize_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  EXPECT_EQ(sanitize_utf8("\xF0\x9F\x98"), kFffd);
  EXPECT_EQ(sanitize_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(Utf8, NonFinalKeepsIncompleteTail) {
  std::string out;
  EXPECT_EQ(append_utf8_lossy("a\xF0\x9F", out, /*final=*/false), 1u);
  EXPECT_EQ(out, "a");
  out.clear();
  EXPECT_EQ(append_utf8_lossy("a\xFF", out, /*final=*/false), 2u);
  EXPECT_EQ(out, "a" + kFffd);
}

TEST(Utf8, Validity) {
  EXPECT_TRUE(is_valid_utf8("h\xC3\xA9llo \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xC3"));
  EXPECT_FALSE(is_valid_utf8("\xE0\x80\x80"));
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));
  EXPECT_TRUE(is_valid_utf8("\xF4\x8F\xBF\xBF"));
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));
}

TEST(Utf8, AppendCodePoint) {
  std::string s;
  for (uint32_t cp : {0x41u, 0xE9u, 0x20ACu, 0x1F600u}) append_utf8(cp, s);
  EXPECT_EQ(s, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace qvl
