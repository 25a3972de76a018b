// Unicode normalisation used before pre-tokenisation (tokenizer.json "normalizer").
#pragma once

#include <string>
#include <string_view>

namespace qvl {

// NFC of valid UTF-8 text (utf8proc). Text whose code points are all below U+0300 is already
// NFC and is returned without calling into utf8proc.
std::string nfc_normalize(std::string_view text);

}  // namespace qvl
