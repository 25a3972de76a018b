#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>

#include "base/error.h"

namespace qvl {

namespace {

// Lead bytes below 0xCC encode code points below U+0300; no such code point changes under NFC
// and none composes with a preceding one.
bool trivially_nfc(std::string_view text) {
  for (unsigned char c : text) {
    if (c >= 0xCC) return false;
  }
  return true;
}

}  // namespace

std::string nfc_normalize(std::string_view text) {
  if (trivially_nfc(text)) return std::string(text);
  utf8proc_uint8_t* result = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &result,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (length < 0) {
    fail(ErrorCode::kInvalidArgument,
         std::string("NFC normalisation failed: ") + utf8proc_errmsg(length));
  }
  std::string out(reinterpret_cast<const char*>(result), static_cast<size_t>(length));
  std::free(result);
  return out;
}

}  // namespace qvl
