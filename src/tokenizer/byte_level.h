// GPT-2 style byte-level alphabet: every byte maps to one printable code point, so BPE
// vocabularies can store arbitrary bytes as text. Printable Latin-1 bytes map to themselves; the
// rest (controls, space, 0x7F..0xA0, 0xAD) map to U+0100 onwards in byte order.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qvl {

class ByteLevelAlphabet {
 public:
  ByteLevelAlphabet();

  uint32_t code_point(uint8_t byte) const { return byte_to_cp_[byte]; }
  // The UTF-8 text of the code point that stands for `byte`.
  const std::string& symbol(uint8_t byte) const { return byte_to_symbol_[byte]; }
  // Maps a vocabulary string back to raw bytes; nullopt if it uses a code point outside the
  // alphabet or is not valid UTF-8.
  std::optional<std::string> to_bytes(std::string_view symbols) const;
  // Maps raw bytes to their vocabulary spelling.
  std::string to_symbols(std::string_view bytes) const;

 private:
  std::array<uint32_t, 256> byte_to_cp_{};
  std::array<std::string, 256> byte_to_symbol_;
  std::array<int16_t, 512> cp_to_byte_{};  // every code point of the alphabet is < 512
};

const ByteLevelAlphabet& byte_level_alphabet();

}  // namespace qvl
