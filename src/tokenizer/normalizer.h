// Unicode normalisation used before pre-tokenisation (tokenizer.json "normalizer").
#pragma once

#include <string>
#include <string_view>

namespace qvl {

// NFC of valid UTF-8 text. Only spans that NFC can change (around combining marks, decomposable
// or composable characters) are passed to utf8proc; the rest is copied.
std::string nfc_normalize(std::string_view text);

// NFC of the whole text by utf8proc in one call (the reference for nfc_normalize in tests).
std::string nfc_normalize_whole(std::string_view text);

}  // namespace qvl
