#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "base/error.h"

namespace qvl {

namespace {

constexpr uint32_t kCodePointCount = 0x110000;

// "Safe" code points are NFC boundaries: they are starters (combining class 0), NFC leaves them
// unchanged, and they never compose with a preceding character. Text can be cut before any safe
// code point and normalised piecewise, so only short spans around combining marks, decomposable
// and composable characters go through utf8proc. Built once from utf8proc's own data.
class SafeTable {
 public:
  SafeTable() : bits_(kCodePointCount / 64, ~uint64_t{0}) {
    std::vector<bool> second(kCodePointCount, false);
    utf8proc_int32_t decomposed[8];
    for (uint32_t cp = 0; cp < kCodePointCount; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
      int boundclass = 0;
      const utf8proc_ssize_t n = utf8proc_decompose_char(
          static_cast<utf8proc_int32_t>(cp), decomposed, 8, UTF8PROC_DECOMPOSE, &boundclass);
      const bool hangul_syllable = cp >= 0xAC00 && cp <= 0xD7A3;  // stable, algorithmic
      const bool changes = !(n == 1 && static_cast<uint32_t>(decomposed[0]) == cp);
      if (p->combining_class != 0 || (changes && !hangul_syllable)) clear(cp);
      // The second half of a pair that recomposes to cp can merge with what precedes it.
      if (n == 2 && !hangul_syllable) {
        utf8proc_int32_t pair[2] = {decomposed[0], decomposed[1]};
        if (utf8proc_normalize_utf32(pair, 2, UTF8PROC_COMPOSE) == 1) second[decomposed[1]] = true;
      }
    }
    for (uint32_t cp = 0x1160; cp <= 0x11FF; ++cp) clear(cp);  // Hangul V/T jamo
    for (uint32_t cp = 0; cp < kCodePointCount; ++cp) {
      if (second[cp]) clear(cp);
    }
  }
  bool safe(uint32_t cp) const { return (bits_[cp >> 6] >> (cp & 63)) & 1; }

 private:
  void clear(uint32_t cp) { bits_[cp >> 6] &= ~(uint64_t{1} << (cp & 63)); }
  std::vector<uint64_t> bits_;
};

const SafeTable& safe_table() {
  static const SafeTable table;
  return table;
}

// Decodes one code point of valid UTF-8 at `i`; returns its byte length.
size_t decode(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i + k])); };
  const uint32_t lead = b(0);
  if (lead < 0x80) {
    cp = lead;
    return 1;
  }
  if (lead < 0xE0) {
    cp = ((lead & 0x1F) << 6) | (b(1) & 0x3F);
    return 2;
  }
  if (lead < 0xF0) {
    cp = ((lead & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    return 3;
  }
  cp = ((lead & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  return 4;
}

// Lead bytes below 0xCC encode code points below U+0300, which are all safe.
bool trivially_nfc(std::string_view text) {
  for (unsigned char c : text) {
    if (c >= 0xCC) return false;
  }
  return true;
}

}  // namespace

std::string nfc_normalize_whole(std::string_view text) {
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

std::string nfc_normalize(std::string_view text) {
  if (trivially_nfc(text)) return std::string(text);
  const SafeTable& table = safe_table();
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;       // text[0, copied) is in `out`
  size_t chunk_start = 0;  // position of the last safe code point (a normalisation boundary)
  size_t i = 0;
  while (i < text.size()) {
    uint32_t cp;
    const size_t length = decode(text, i, cp);
    if (cp < 0x80 || table.safe(cp)) {
      chunk_start = i;
      i += length;
      continue;
    }
    // Normalise from the last boundary up to the next safe code point.
    size_t end = i + length;
    while (end < text.size()) {
      const size_t next_length = decode(text, end, cp);
      if (cp < 0x80 || table.safe(cp)) break;
      end += next_length;
    }
    out.append(text.data() + copied, chunk_start - copied);
    out += nfc_normalize_whole(text.substr(chunk_start, end - chunk_start));
    copied = chunk_start = i = end;
  }
  out.append(text.data() + copied, text.size() - copied);
  return out;
}

}  // namespace qvl
