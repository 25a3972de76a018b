// The tokenizer a GGUF language model carries (tokenizer.ggml.*, written as llama.cpp's converter
// writes Qwen's) encodes and decodes exactly as the tokenizer.json it came from.
#include "model/gguf_tokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "../model/gguf_tiny_writer.h"
#include "../tokenizer/tokenizer_test_support.h"
#include "base/error.h"
#include "tokenizer/tokenizer.h"

namespace qvl {
namespace {

constexpr int64_t kVocabSize = 151936;  // Qwen3-VL's embedding rows (more than the tokens)

const Tokenizer& gguf_tokenizer() {
  static const Tokenizer t = [] {
    testing::GgufBuilder b;
    testing::add_tokenizer_keys(b, test::qwen3_tokenizer_dir() + "/tokenizer.json", kVocabSize);
    static const std::vector<uint8_t> bytes = b.bytes();
    const GgufFile f = GgufFile::parse(bytes.data(), bytes.size(), "tokenizer.gguf");
    return Tokenizer::from_json_text(gguf_tokenizer_json(f));
  }();
  return t;
}

std::vector<std::string> corpus() {
  std::vector<std::string> texts = {
      "",
      "Hello, world! How are you doing today?",
      "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n<|vision_start|>"
      "<|image_pad|><|vision_end|>Describe the picture.<|im_end|>\n<|im_start|>assistant\n",
      "<think>\nreasoning\n</think>\n\n<tool_call>\n{\"name\": \"get\", \"arguments\": {}}\n"
      "</tool_call><|fim_prefix|>x<|fim_suffix|>",
      "   spaces\t\ttabs\r\n\r\nwindows lines\n\n\n   ",
      "I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like tea?",
      "3 33 333 3333 33333 3.3 3..3 3...3 ------======= !!!!!!?????? ......",
      "Ünïcödé: 日本語のテキスト, 中文文本, 한국어, Ελληνικά, русский, עברית, العربية, हिन्दी",
      "emoji 🚀 😶‍🌫️ 👍🏽 combining e\u0301 vs \u00e9, ﬁ ligature, "
      "ＦＵＬＬＷＩＤＴＨ",
      "code: for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; } // done",
      "invalid utf-8: \xff\xfe\xc3 end \xe2\x80",
      "<|endoftext|><|im_end|><|box_start|>(10,20),(30,40)<|box_end|>",
  };
  const std::vector<std::string> pieces = {"a",       "B",        " ",    "\n", "\t", "é",
                                           "語",      "😀",        "'s",   "12", ".",  "<|im_end|>",
                                           "<think>", "\xe2\x80", "ab c", "  ", "ß",  "ﬁ"};
  std::mt19937 rng(7);
  for (int i = 0; i < 400; ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % 48);
    for (int k = 0; k < n; ++k) s += pieces[rng() % pieces.size()];
    texts.push_back(s);
  }
  return texts;
}

TEST(GgufTokenizer, EncodesAndDecodesLikeTokenizerJson) {
  const Tokenizer& json = test::qwen3_tokenizer();
  const Tokenizer& gguf = gguf_tokenizer();
  EXPECT_EQ(gguf.vocab_size(), json.vocab_size());
  for (const std::string& text : corpus()) {
    const auto ids = json.encode(text);
    ASSERT_EQ(gguf.encode(text), ids) << text;
    ASSERT_EQ(gguf.encode(text, {.parse_special_tokens = false}),
              json.encode(text, {.parse_special_tokens = false}))
        << text;
    EXPECT_EQ(gguf.decode(ids), json.decode(ids));
  }
  for (int32_t id = 0; id < json.vocab_size(); ++id) {
    ASSERT_EQ(gguf.token_bytes(id), json.token_bytes(id)) << id;
    ASSERT_EQ(gguf.is_added_token(id), json.is_added_token(id)) << id;
  }
  // Special flags follow the converter: CONTROL for HF-special tokens and for any <|...|> one.
  for (const AddedToken& t : json.added_tokens()) {
    const bool looks_special = t.content.rfind("<|", 0) == 0;
    EXPECT_EQ(gguf.is_special_token(t.id), t.special || looks_special) << t.content;
  }
  EXPECT_EQ(gguf.token_id("<|image_pad|>"), 151655);
}

TEST(GgufTokenizer, RefusesOtherTokenizers) {
  testing::GgufBuilder b;
  b.string("tokenizer.ggml.model", "llama");
  b.strings("tokenizer.ggml.tokens", {"a"});
  b.i32s("tokenizer.ggml.token_type", {1});
  const auto bytes = b.bytes();
  const GgufFile f = GgufFile::parse(bytes.data(), bytes.size(), "spm.gguf");
  try {
    gguf_tokenizer_json(f);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("llama/"), std::string::npos) << e.what();
  }
  testing::GgufBuilder c;
  c.string("tokenizer.ggml.model", "gpt2");
  c.string("tokenizer.ggml.pre", "qwen2");
  c.strings("tokenizer.ggml.tokens", {"a", "b"});
  c.i32s("tokenizer.ggml.token_type", {1});
  const auto cb = c.bytes();
  EXPECT_THROW(gguf_tokenizer_json(GgufFile::parse(cb.data(), cb.size(), "short.gguf")), Error);
}

}  // namespace
}  // namespace qvl
