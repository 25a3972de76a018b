#include "tokenizer/incremental_decoder.h"

#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_support.h"

namespace qvl {
namespace {

using test::qwen3_tokenizer;

int32_t byte_token(uint8_t b) {
  return qwen3_tokenizer().token_id_or_throw(byte_level_alphabet().symbol(b));
}

std::vector<int32_t> byte_tokens(const std::string& bytes) {
  std::vector<int32_t> ids;
  for (unsigned char c : bytes) ids.push_back(byte_token(c));
  return ids;
}

TEST(IncrementalDecoder, HoldsBackSplitCharacters) {
  IncrementalDecoder decoder(qwen3_tokenizer());
  // "é" = C3 A9 fed as two byte tokens: nothing, then the whole character.
  EXPECT_EQ(decoder.push(byte_token(0xC3)), "");
  EXPECT_EQ(decoder.pending_bytes(), 1u);
  EXPECT_EQ(decoder.push(byte_token(0xA9)), "\xC3\xA9");
  EXPECT_EQ(decoder.pending_bytes(), 0u);
  EXPECT_EQ(decoder.flush(), "");
}

TEST(IncrementalDecoder, EmojiAcrossFourTokens) {
  IncrementalDecoder decoder(qwen3_tokenizer());
  const std::string emoji = "\xF0\x9F\x98\x80";  // U+1F600
  std::string out;
  for (int32_t id : byte_tokens(emoji)) {
    const std::string piece = decoder.push(id);
    EXPECT_TRUE(piece.empty() || piece == emoji);
    out += piece;
  }
  EXPECT_EQ(out, emoji);
  // A ZWJ family as the real tokenizer splits it: every emitted piece is valid UTF-8.
  const std::string family =
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7";
  out.clear();
  for (int32_t id : qwen3_tokenizer().encode("a" + family + "b")) {
    const std::string piece = decoder.push(id);
    EXPECT_TRUE(is_valid_utf8(piece));
    out += piece;
  }
  out += decoder.flush();
  EXPECT_EQ(out, "a" + family + "b");
}

TEST(IncrementalDecoder, FlushTurnsUnfinishedBytesIntoOneReplacement) {
  IncrementalDecoder decoder(qwen3_tokenizer());
  EXPECT_EQ(decoder.push(byte_token(0xE2)), "");
  EXPECT_EQ(decoder.push(byte_token(0x82)), "");
  EXPECT_EQ(decoder.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(decoder.flush(), "");  // reusable after a flush
}

TEST(IncrementalDecoder, ImpossibleBytesAreReplacedImmediately) {
  IncrementalDecoder decoder(qwen3_tokenizer());
  EXPECT_EQ(decoder.push(byte_token(0xFF)), "\xEF\xBF\xBD");
  EXPECT_EQ(decoder.push(byte_token(0xC3)), "");
  // 'A' cannot continue C3: C3 becomes U+FFFD and 'A' comes through.
  EXPECT_EQ(decoder.push(byte_token('A')),
            "\xEF\xBF\xBD"
            "A");
}

TEST(IncrementalDecoder, SpecialTokensEndPendingBytesAndCanBeSkipped) {
  IncrementalDecoder keep(qwen3_tokenizer());
  EXPECT_EQ(keep.push(byte_token(0xC3)), "");
  EXPECT_EQ(keep.push(151645), "\xEF\xBF\xBD<|im_end|>");
  IncrementalDecoder skip(qwen3_tokenizer(), /*skip_special_tokens=*/true);
  EXPECT_EQ(skip.push(byte_token(0xC3)), "");
  EXPECT_EQ(skip.push(151645), "");  // skipped tokens do not break the character
  EXPECT_EQ(skip.push(byte_token(0xA9)), "\xC3\xA9");
}

TEST(IncrementalDecoder, UnknownIdsProduceNothing) {
  IncrementalDecoder decoder(qwen3_tokenizer());
  EXPECT_EQ(decoder.push(151900), "");
  EXPECT_EQ(decoder.push(-1), "");
  EXPECT_EQ(decoder.flush(), "");
}

// Streaming output must equal a one-shot decode for any id sequence, valid text or not.
TEST(IncrementalDecoder, StreamEqualsOneShotDecodeOnRandomIds) {
  const Tokenizer& t = qwen3_tokenizer();
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (bool skip : {false, true}) {
    for (int round = 0; round < 300; ++round) {
      std::vector<int32_t> ids;
      const size_t length = next() % 40;
      for (size_t i = 0; i < length; ++i) {
        const uint64_t kind = next() % 10;
        if (kind < 5) {
          ids.push_back(byte_token(static_cast<uint8_t>(0x80 + next() % 0x80)));
        } else if (kind < 8) {
          ids.push_back(static_cast<int32_t>(next() % 151643));
        } else {
          ids.push_back(static_cast<int32_t>(151643 + next() % 30));
        }
      }
      IncrementalDecoder decoder(t, skip);
      std::string streamed;
      for (int32_t id : ids) {
        const std::string piece = decoder.push(id);
        ASSERT_TRUE(is_valid_utf8(piece));
        streamed += piece;
      }
      streamed += decoder.flush();
      ASSERT_EQ(streamed, t.decode(ids, skip)) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace qvl
