// Leveled logging to stderr. Cheap when a level is disabled: the message is not formatted.
#pragma once

#include <sstream>
#include <string>

namespace qvl {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
// Parses "debug", "info", "warn", "error", "off"; throws on anything else.
LogLevel parse_log_level(const std::string& name);
void log_message(LogLevel level, const std::string& message);

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
