// Leveled logging to stderr. Cheap when a level is disabled: the message is not formatted.
// A line is `[qvl I 2026-12-06T07:12:03.458+01:00] message` (local time, milliseconds, offset) or,
// for log collectors, one JSON object: {"time":"...","level":"info","message":"..."}.
#pragma once

#include <chrono>
#include <sstream>
#include <string>

namespace qvl {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
// Parses "debug", "info", "warn", "error", "off"; throws on anything else.
LogLevel parse_log_level(const std::string& name);
void log_message(LogLevel level, const std::string& message);

enum class LogFormat { kText, kJson };
void set_log_format(LogFormat format);
// Parses "text" or "json"; throws on anything else.
LogFormat parse_log_format(const std::string& name);
// Local ISO-8601 time with milliseconds and UTC offset, e.g. "2026-12-06T07:12:03.458+01:00".
std::string local_timestamp(std::chrono::system_clock::time_point when);
// One log line without its newline. JSON text is always valid UTF-8 (bad bytes become U+FFFD).
std::string format_log_line(LogFormat format, LogLevel level,
                            std::chrono::system_clock::time_point when, const std::string& message);

namespace detail {
class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine() { log_message(level_, stream_.str()); }
  template <typename T>
  LogLine& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace detail

}  // namespace qvl

#define QVL_LOG(level)                               \
  if (::qvl::LogLevel::level < ::qvl::log_level()) { \
  } else                                             \
    ::qvl::detail::LogLine(::qvl::LogLevel::level)
