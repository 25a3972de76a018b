#include "grammar/leaf_steps.h"

#include <algorithm>

#include "grammar/string_format.h"

namespace qvl::grammar {
namespace {

enum : uint8_t { kStart = 0, kStrContent = 1, kStrEscape = 2, kStrHex = 3, kStrClosed = 7 };

bool is_digit(uint8_t c) {
  return c >= '0' && c <= '9';
}

bool tag_ok(const Node& n, const Frame& f, size_t k) {
  return n.tags.empty() || (n.tags[k] >= f.tag_lo && n.tags[k] <= f.tag_hi);
}

}  // namespace

// Literal frame: a = lo, b = hi (candidate range), c = bytes matched.
bool literal_finishable(const Node& n, const Frame& f) {
  return f.a < f.b && static_cast<int32_t>(n.literals[f.a].size()) == f.c && tag_ok(n, f, f.a);
}

bool literal_consume(const Node& n, Frame& f, uint8_t c) {
  const size_t pos = static_cast<size_t>(f.c);
  auto begin = n.literals.begin() + f.a, end = n.literals.begin() + f.b;
  if (begin != end && begin->size() == pos) ++begin;  // the exact match (sorted first)
  const auto at = [pos](const std::string& s) { return static_cast<uint8_t>(s[pos]); };
  const auto lo = std::partition_point(begin, end, [&](const std::string& s) { return at(s) < c; });
  const auto hi = std::partition_point(lo, end, [&](const std::string& s) { return at(s) == c; });
  if (lo == hi) return false;
  const int32_t new_lo = static_cast<int32_t>(lo - n.literals.begin());
  const int32_t new_hi = static_cast<int32_t>(hi - n.literals.begin());
  bool any = n.tags.empty();
  for (int32_t k = new_lo; k < new_hi && !any; ++k) any = tag_ok(n, f, k);
  if (!any) return false;
  f.a = new_lo;
  f.b = new_hi;
  ++f.c;
  return true;
}

// String frame: stage, a = pending UTF-8 continuation bytes, b = format position, c = memo.
bool string_consume(const Node& n, Frame& f, uint8_t c) {
  switch (f.stage) {
    case kStart:
      if (c != '"') return false;
      f.stage = kStrContent;
      return true;
    case kStrContent:
      if (n.format != StringFormat::kNone) {
        const int length = Grammar::format_length(n.format);
        if (f.b == length) {
          if (c != '"') return false;
          f.stage = kStrClosed;
          return true;
        }
        if (!format_accepts(n.format, f.b, f.c, c)) return false;
        ++f.b;
        return true;
      }
      if (f.a > 0) {
        if ((c & 0xC0) != 0x80) return false;
        --f.a;
        return true;
      }
      if (c == '"') {
        f.stage = kStrClosed;
      } else if (c == '\\') {
        f.stage = kStrEscape;
      } else if (c < 0x20) {
        return false;
      } else if (c >= 0x80) {
        f.a = c >= 0xC2 && c <= 0xDF   ? 1
              : c >= 0xE0 && c <= 0xEF ? 2
              : c >= 0xF0 && c <= 0xF4 ? 3
                                       : 0;
        if (f.a == 0) return false;
      }
      return true;
    case kStrEscape:
      if (c == 'u') {
        f.stage = kStrHex;
        return true;
      }
      if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' &&
          c != 't') {
        return false;
      }
      f.stage = kStrContent;
      return true;
    case kStrHex:
    case kStrHex + 1:
    case kStrHex + 2:
    case kStrHex + 3:
      if (!is_digit(c) && !((c | 0x20) >= 'a' && (c | 0x20) <= 'f')) return false;
      f.stage = f.stage == kStrHex + 3 ? kStrContent : f.stage + 1;
      return true;
  }
  return false;
}

// Number frame stages: 0 start, 1 after '-', 2 integer digits, 3 after a leading 0, 4 after '.',
// 5 fraction digits, 6 after 'e', 7 after the exponent sign, 8 exponent digits; a = digits.
bool number_consume(const Node& n, Frame& f, uint8_t c) {
  const bool digit = is_digit(c);
  const bool fraction_ok = !n.integer;
  switch (f.stage) {
    case 0:
    case 1:
      if (c == '-' && f.stage == 0) {
        f.stage = 1;
      } else if (c == '0') {
        f.stage = 3;
      } else if (digit) {
        f.stage = 2;
        f.a = 1;
      } else {
        return false;
      }
      return true;
    case 2:
    case 3:
      if (digit && f.stage == 2 && f.a < kMaxIntegerDigits) {
        ++f.a;
      } else if (c == '.' && fraction_ok) {
        f.stage = 4;
      } else if ((c == 'e' || c == 'E') && fraction_ok) {
        f.stage = 6;
      } else {
        return false;
      }
      return true;
    case 4:
    case 5:
      if (digit && (f.stage == 4 || f.a < kMaxFractionDigits)) {
        f.a = f.stage == 4 ? 1 : f.a + 1;
        f.stage = 5;
      } else if ((c == 'e' || c == 'E') && f.stage == 5) {
        f.stage = 6;
      } else {
        return false;
      }
      return true;
    case 6:
    case 7:
      if ((c == '+' || c == '-') && f.stage == 6) {
        f.stage = 7;
      } else if (digit) {
        f.stage = 8;
        f.a = 1;
      } else {
        return false;
      }
      return true;
    case 8:
      if (!digit || f.a >= kMaxExponentDigits) return false;
      ++f.a;
      return true;
  }
  return false;
}

}  // namespace qvl::grammar
