#include "base/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "base/error.h"

namespace qvl {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
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

void log_message(LogLevel level, const std::string& message) {
  if (level < g_level.load()) return;
  using namespace std::chrono;
  const double t = duration<double>(system_clock::now().time_since_epoch()).count();
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "[qvl %s %.3f] %s\n", level_tag(level), t, message.c_str());
}

}  // namespace qvl
