#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace qvl {

ByteLevelAlphabet::ByteLevelAlphabet() {
  cp_to_byte_.fill(-1);
  uint32_t next_extra = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const uint32_t cp = printable ? static_cast<uint32_t>(b) : next_extra++;
    byte_to_cp_[b] = cp;
    cp_to_byte_[cp] = static_cast<int16_t>(b);
    append_utf8(cp, byte_to_symbol_[b]);
  }
}

std::optional<std::string> ByteLevelAlphabet::to_bytes(std::string_view symbols) const {
  std::string out;
  out.reserve(symbols.size());
  const auto* s = reinterpret_cast<const uint8_t*>(symbols.data());
  size_t i = 0;
  while (i < symbols.size()) {
    uint32_t cp;
    if (s[i] < 0x80) {
      cp = s[i];
      i += 1;
    } else if ((s[i] & 0xE0) == 0xC0 && i + 1 < symbols.size() && (s[i + 1] & 0xC0) == 0x80) {
      cp = ((s[i] & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
      i += 2;
    } else {
      return std::nullopt;  // the alphabet only uses 1- and 2-byte code points
    }
    if (cp >= cp_to_byte_.size() || cp_to_byte_[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(cp_to_byte_[cp]));
  }
  return out;
}

std::string ByteLevelAlphabet::to_symbols(std::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += byte_to_symbol_[b];
  return out;
}

const ByteLevelAlphabet& byte_level_alphabet() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

}  // namespace qvl
