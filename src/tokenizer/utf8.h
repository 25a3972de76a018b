// UTF-8 helpers shared by the tokenizer: lossy validation and code point encoding.
//
// Invalid input is replaced with U+FFFD using the "maximal subpart" rule of the WHATWG Encoding
// standard (also what Python's errors="replace", Rust's from_utf8_lossy and node's
// Buffer.toString do), so every layer agrees on how many replacement characters appear.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qvl {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Appends `in` to `out`, replacing each maximal invalid subpart with U+FFFD. When `final` is
// false, a trailing sequence that is a valid but incomplete prefix of a character is left
// unconsumed. Returns the number of bytes of `in` consumed.
size_t append_utf8_lossy(std::string_view in, std::string& out, bool final);

// Returns `in` with invalid UTF-8 replaced by U+FFFD (the whole input is consumed).
std::string sanitize_utf8(std::string_view in);

bool is_valid_utf8(std::string_view in);

// Appends the UTF-8 encoding of a Unicode scalar value (cp < 0x110000, not a surrogate).
void append_utf8(uint32_t cp, std::string& out);

}  // namespace qvl
