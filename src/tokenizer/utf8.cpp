#include "tokenizer/utf8.h"

namespace qvl {

namespace {

// For a lead byte, the number of continuation bytes and the allowed range of the first one
// (narrower than 80..BF for E0, ED, F0, F4 so overlongs, surrogates and > U+10FFFF are invalid).
struct LeadInfo {
  int continuation_bytes;  // -1: not a valid lead byte
  uint8_t first_low;
  uint8_t first_high;
};

LeadInfo lead_info(uint8_t b) {
  if (b >= 0xC2 && b <= 0xDF) return {1, 0x80, 0xBF};
  if (b == 0xE0) return {2, 0xA0, 0xBF};
  if (b == 0xED) return {2, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {2, 0x80, 0xBF};
  if (b == 0xF0) return {3, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {3, 0x80, 0xBF};
  if (b == 0xF4) return {3, 0x80, 0x8F};
  return {-1, 0, 0};
}

}  // namespace

size_t append_utf8_lossy(std::string_view in, std::string& out, bool final) {
  const auto* s = reinterpret_cast<const uint8_t*>(in.data());
  const size_t n = in.size();
  size_t i = 0;
  while (i < n) {
    // Copy ASCII runs in one go; they dominate typical text.
    size_t ascii_end = i;
    while (ascii_end < n && s[ascii_end] < 0x80) ++ascii_end;
    if (ascii_end > i) {
      out.append(in.data() + i, ascii_end - i);
      i = ascii_end;
      continue;
    }
    const LeadInfo info = lead_info(s[i]);
    if (info.continuation_bytes < 0) {
      out.append(kReplacementChar);
      ++i;
      continue;
    }
    size_t j = i + 1;
    int have = 0;
    uint8_t low = info.first_low, high = info.first_high;
    while (have < info.continuation_bytes && j < n && s[j] >= low && s[j] <= high) {
      ++j;
      ++have;
      low = 0x80;
      high = 0xBF;
    }
    if (have == info.continuation_bytes) {
      out.append(in.data() + i, j - i);
    } else if (j == n && !final) {
      return i;  // a valid prefix that more bytes may complete
    } else {
      out.append(kReplacementChar);  // one U+FFFD per maximal subpart
    }
    i = j;
  }
  return n;
}

std::string sanitize_utf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  append_utf8_lossy(in, out, /*final=*/true);
  return out;
}

bool is_valid_utf8(std::string_view in) {
  const auto* s = reinterpret_cast<const uint8_t*>(in.data());
  const size_t n = in.size();
  size_t i = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    const LeadInfo info = lead_info(s[i]);
    if (info.continuation_bytes < 0 || n - i <= static_cast<size_t>(info.continuation_bytes)) {
      return false;
    }
    if (s[i + 1] < info.first_low || s[i + 1] > info.first_high) return false;
    for (int k = 2; k <= info.continuation_bytes; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
    }
    i += info.continuation_bytes + 1;
  }
  return true;
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace qvl
