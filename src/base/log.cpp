#include "base/log.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "base/error.h"

namespace qvl {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
std::atomic<LogFormat> g_format{LogFormat::kText};
std::mutex g_mutex;

const char* level_tag(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "D";
    case LogLevel::kInfo:
      return "I";
    case LogLevel::kWarn:
      return "W";
    case LogLevel::kError:
      return "E";
    case LogLevel::kOff:
      return "-";
  }
  return "?";
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "?";
}

// Length of the well-formed UTF-8 sequence starting at s[i] (2..4), or 0 if there is none there.
size_t utf8_sequence_length(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t length = 0;
  uint32_t code = 0, smallest = 0;
  if ((c & 0xE0) == 0xC0) {
    length = 2, code = c & 0x1F, smallest = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    length = 3, code = c & 0x0F, smallest = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    length = 4, code = c & 0x07, smallest = 0x10000;
  } else {
    return 0;
  }
  if (i + length > s.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(s[i + k]);
    if ((next & 0xC0) != 0x80) return 0;
    code = (code << 6) | (next & 0x3F);
  }
  const bool surrogate = code >= 0xD800 && code <= 0xDFFF;
  return code < smallest || code > 0x10FFFF || surrogate ? 0 : length;
}

// Messages carry client text (paths, model names, error details): escaped, and made valid UTF-8
// so that a collector never drops the line.
void append_json_string(const std::string& s, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t length = utf8_sequence_length(s, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(s, i, length);
        i += length;
      }
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
}
}  // namespace

void set_log_level(LogLevel level) {
  g_level.store(level);
}
LogLevel log_level() {
  return g_level.load();
}

LogLevel parse_log_level(const std::string& name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  if (name == "off") return LogLevel::kOff;
  fail(ErrorCode::kInvalidArgument,
       "unknown log level '" + name + "' (use debug, info, warn, error or off)");
}

void set_log_format(LogFormat format) {
  g_format.store(format);
}

LogFormat parse_log_format(const std::string& name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  fail(ErrorCode::kInvalidArgument, "unknown log format '" + name + "' (use text or json)");
}

std::string local_timestamp(std::chrono::system_clock::time_point when) {
  using namespace std::chrono;
  const int64_t ms = duration_cast<milliseconds>(when.time_since_epoch()).count();
  const int64_t seconds = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);  // floor, also before 1970
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm local{};
  localtime_r(&t, &local);
  const long offset = local.tm_gmtoff;  // seconds east of UTC, summer time included
  const long offset_minutes = (offset < 0 ? -offset : offset) / 60;
  char text[128];  // room for any field values, so GCC can prove no truncation
  std::snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%03d%c%02ld:%02ld",
                local.tm_year + 1900, local.tm_mon + 1, local.tm_mday, local.tm_hour, local.tm_min,
                local.tm_sec, static_cast<int>(ms - seconds * 1000), offset < 0 ? '-' : '+',
                offset_minutes / 60, offset_minutes % 60);
  return text;
}

std::string format_log_line(LogFormat format, LogLevel level,
                            std::chrono::system_clock::time_point when,
                            const std::string& message) {
  const std::string time = local_timestamp(when);
  if (format == LogFormat::kText) {
    return std::string("[qvl ") + level_tag(level) + " " + time + "] " + message;
  }
  std::string line =
      "{\"time\":\"" + time + "\",\"level\":\"" + level_name(level) + "\",\"message\":";
  append_json_string(message, line);
  line += '}';
  return line;
}

void log_message(LogLevel level, const std::string& message) {
  if (level < g_level.load()) return;
  std::string line =
      format_log_line(g_format.load(), level, std::chrono::system_clock::now(), message);
  line += '\n';
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace qvl
