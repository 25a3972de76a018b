// The compact form of the tokenizer (stored in pre-packed model files) behaves exactly as the
// tokenizer.json it was made from, and damaged blobs give a clear error.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_support.h"

namespace qvl {
namespace {

using test::qwen3_tokenizer;

std::vector<std::string> corpus() {
  std::vector<std::string> texts = {
      "",
      "Hello, world! How are you doing today?",
      "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>What is this?<|im_end|>\n"
      "<|im_start|>assistant\n",
      "  leading spaces\t\ttabs\n\n\nnewlines   trailing   ",
      "Numbers 1234567890 and 3.14159, dates 2024-05-06.",
      "Ünïcödé: 日本語のテキスト, 中文文本, 한국어, Ελληνικά, русский, עברית, العربية",
      "emoji 😀🎉👍🏽 and combining e\u0301 vs \u00e9 (NFC)",
      "code: for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; }",
      "invalid utf-8: \xff\xfe\xc3 end",
      "<think>\n\n</think>\n\n<tool_call>{\"name\": \"f\"}</tool_call>",
  };
  // Random byte soup over a small alphabet that mixes ASCII, multi-byte text and special tokens.
  const std::vector<std::string> pieces = {"a", "b",  " ",   "\n", "é",          "語",
                                           "😀", "'s", "123", ".",  "<|im_end|>", "\xe2\x80"};
  std::mt19937 rng(42);
  for (int i = 0; i < 200; ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) s += pieces[rng() % pieces.size()];
    texts.push_back(s);
  }
  return texts;
}

TEST(TokenizerCompact, EncodesAndDecodesLikeTheJsonTokenizer) {
  const Tokenizer& json = qwen3_tokenizer();
  const std::string blob = json.to_compact();
  const Tokenizer compact = Tokenizer::from_compact(blob);
  EXPECT_EQ(compact.vocab_size(), json.vocab_size());
  ASSERT_EQ(compact.added_tokens().size(), json.added_tokens().size());
  for (size_t i = 0; i < json.added_tokens().size(); ++i) {
    EXPECT_EQ(compact.added_tokens()[i].id, json.added_tokens()[i].id);
    EXPECT_EQ(compact.added_tokens()[i].content, json.added_tokens()[i].content);
    EXPECT_EQ(compact.added_tokens()[i].special, json.added_tokens()[i].special);
  }
  for (const std::string& text : corpus()) {
    const auto ids = json.encode(text);
    EXPECT_EQ(compact.encode(text), ids) << text;
    EXPECT_EQ(compact.encode(text, {.parse_special_tokens = false}),
              json.encode(text, {.parse_special_tokens = false}))
        << text;
    EXPECT_EQ(compact.decode(ids), json.decode(ids));
    EXPECT_EQ(compact.decode(ids, true), json.decode(ids, true));
  }
  for (int32_t id = 0; id < json.vocab_size(); id += 7) {
    ASSERT_EQ(compact.token_bytes(id), json.token_bytes(id)) << id;
    ASSERT_EQ(compact.is_special_token(id), json.is_special_token(id)) << id;
  }
  EXPECT_EQ(compact.token_id("\xC4\x8A"), json.token_id("\xC4\x8A"));  // "Ċ", a vocab spelling
  EXPECT_EQ(compact.token_id("<|im_start|>"), 151644);
  // Deterministic: the same tokenizer always gives the same bytes.
  EXPECT_EQ(compact.to_compact(), blob);
}

TEST(TokenizerCompact, DamagedBlobsThrowCorrupt) {
  const std::string blob = qwen3_tokenizer().to_compact();
  auto expect_corrupt = [](const std::string& bytes, const char* why) {
    try {
      Tokenizer::from_compact(bytes);
      ADD_FAILURE() << "accepted " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCorrupt) << why << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("compact tokenizer"), std::string::npos) << e.what();
    }
  };
  expect_corrupt("", "empty");
  expect_corrupt("NOTATOKENIZER", "bad magic");
  for (size_t cut : {size_t{9}, size_t{100}, blob.size() / 2, blob.size() - 1}) {
    expect_corrupt(blob.substr(0, cut), "truncated");
  }
  expect_corrupt(blob + "x", "trailing bytes");
  std::string huge_count = blob;
  // The id count follows the magic, two flag bytes and the pattern string.
  const size_t pattern_len = static_cast<uint8_t>(blob[10]) | static_cast<uint8_t>(blob[11]) << 8;
  const size_t id_count_at = 8 + 2 + 4 + pattern_len;
  huge_count[id_count_at + 3] = '\x7f';
  expect_corrupt(huge_count, "absurd count");
  // Flip bytes across the blob: every outcome is a tokenizer or a clean error, never a crash.
  std::mt19937 rng(7);
  for (int i = 0; i < 50; ++i) {
    std::string damaged = blob;
    damaged[8 + rng() % (damaged.size() - 8)] ^= static_cast<char>(1 + rng() % 255);
    try {
      Tokenizer::from_compact(damaged).encode("some text <|im_end|> 123");
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace qvl
