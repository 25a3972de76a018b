#include "grammar/string_format.h"

namespace qvl::grammar {
namespace {

bool is_digit(uint8_t c) {
  return c >= '0' && c <= '9';
}

bool is_hex(uint8_t c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int days_in_month(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
  return month == 2 && leap ? 29 : kDays[month - 1];
}

// memo = year * 10000 + month * 100 + day tens * 10.
bool date_accepts(int pos, int32_t& memo, uint8_t c) {
  const int d = c - '0';
  switch (pos) {
    case 0:
    case 1:
    case 2:
    case 3:
      if (!is_digit(c)) return false;
      memo = (memo / 10000 * 10 + d) * 10000;
      return true;
    case 4:
    case 7:
      return c == '-';
    case 5:
      if (c != '0' && c != '1') return false;
      memo += d * 1000;
      return true;
    case 6: {
      const int tens = memo / 1000 % 10;
      if (!is_digit(c) || (tens == 0 && d == 0) || (tens == 1 && d > 2)) return false;
      memo += d * 100;
      return true;
    }
    case 8: {
      const int max_day = days_in_month(memo / 10000, memo / 100 % 100);
      if (!is_digit(c) || d > max_day / 10) return false;
      memo += d * 10;
      return true;
    }
    case 9: {
      const int max_day = days_in_month(memo / 10000, memo / 100 % 100);
      const int day = memo / 10 % 10 * 10 + d;
      return is_digit(c) && day >= 1 && day <= max_day;
    }
  }
  return false;
}

// memo = hour tens digit.
bool time_accepts(int pos, int32_t& memo, uint8_t c) {
  const int d = c - '0';
  switch (pos) {
    case 0:
      if (c < '0' || c > '2') return false;
      memo = d;
      return true;
    case 1:
      return is_digit(c) && (memo < 2 || d <= 3);
    case 2:
    case 5:
      return c == ':';
    case 3:
    case 6:
      return c >= '0' && c <= '5';
    case 4:
    case 7:
      return is_digit(c);
    case 8:
      return c == 'Z';
  }
  return false;
}

}  // namespace

bool format_accepts(StringFormat format, int pos, int32_t& memo, uint8_t c) {
  switch (format) {
    case StringFormat::kNone:
      return false;
    case StringFormat::kDate:
      return date_accepts(pos, memo, c);
    case StringFormat::kTime:
      return time_accepts(pos, memo, c);
    case StringFormat::kDateTime:
      if (pos < 10) return date_accepts(pos, memo, c);
      if (pos == 10) {
        memo = 0;
        return c == 'T';
      }
      return time_accepts(pos - 11, memo, c);
    case StringFormat::kUuid:
      if (pos == 8 || pos == 13 || pos == 18 || pos == 23) return c == '-';
      return is_hex(c);
  }
  return false;
}

}  // namespace qvl::grammar
