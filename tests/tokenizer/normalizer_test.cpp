#include "tokenizer/normalizer.h"

#include <gtest/gtest.h>

#include "tokenizer/utf8.h"

namespace qvl {
namespace {

TEST(Normalizer, KnownCompositions) {
  EXPECT_EQ(nfc_normalize("e\xCC\x81"), "\xC3\xA9");
  EXPECT_EQ(nfc_normalize("\xE2\x84\xAB"), "\xC3\x85");  // U+212B ANGSTROM SIGN -> U+00C5
  EXPECT_EQ(nfc_normalize("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // jamo
  EXPECT_EQ(nfc_normalize("\xEA\xB0\x80\xE1\x86\xA8"), "\xEA\xB0\x81");  // LV + T -> LVT
  EXPECT_EQ(nfc_normalize("a\xCC\x9B\xCC\x81"), nfc_normalize_whole("a\xCC\x9B\xCC\x81"));
  EXPECT_EQ(nfc_normalize(""), "");
  EXPECT_EQ(nfc_normalize("plain ascii"), "plain ascii");
}

// The piecewise normaliser must agree with whole-string NFC; random strings dense in combining
// marks, composable letters, jamo, and characters with singleton or excluded decompositions.
TEST(Normalizer, PiecewiseEqualsWholeStringNfc) {
  const std::vector<uint32_t> alphabet = {
      'a',     'e',     'o',     'A',     'n',     ' ',     '>',     0x300,  0x301,  0x308,
      0x323,   0x31B,   0x327,   0x345,   0x3B1,   0x3B7,   0x1F00,  0x212B, 0x2126, 0xC5,
      0xE9,    0x1100,  0x1161,  0x11A8,  0xAC00,  0xAC01,  0x3099,  0x304B, 0x30AB, 0x0B47,
      0x0B3E,  0x0BC6,  0x0BBE,  0x09C7,  0x09BE,  0x0CC6,  0x0CD5,  0x0D46, 0x0D3E, 0x1025,
      0x102E,  0x0DD9,  0x0DCF,  0x1B05,  0x1B35,  0x0958,  0x2ADC,  0x0344, 0x0F73, 0x4E00,
      0x1F600, 0x1D15E, 0x1D165, 0x110B9, 0x110BA, 0x11131, 0x11127, 0x0627, 0x0653};
  uint64_t state = 42;
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    const int length = 1 + static_cast<int>(state % 9);
    for (int k = 0; k < length; ++k) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      append_utf8(alphabet[(state >> 33) % alphabet.size()], s);
    }
    ASSERT_EQ(nfc_normalize(s), nfc_normalize_whole(s)) << "round " << round;
  }
}

}  // namespace
}  // namespace qvl
