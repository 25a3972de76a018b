// Log lines: local ISO-8601 time with milliseconds and offset, and the JSON form collectors read.
#include "base/log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"

namespace qvl {
namespace {

using Clock = std::chrono::system_clock;

// Sets TZ for one test (POSIX zone strings need no tzdata) and puts the old value back.
class ZoneScope {
 public:
  explicit ZoneScope(const char* zone) {
    const char* old = std::getenv("TZ");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("TZ", zone, 1);
    tzset();
  }
  ~ZoneScope() {
    if (had_) {
      setenv("TZ", old_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  bool had_ = false;
  std::string old_;
};

Clock::time_point at_ms(int64_t ms) {
  return Clock::time_point(std::chrono::milliseconds(ms));
}

TEST(Log, LocalTimestampHasMillisecondsAndOffset) {
  // 2026-12-06T07:12:03.458Z
  const int64_t ms = 1796541123458;
  {
    ZoneScope zone("UTC0");
    EXPECT_EQ(local_timestamp(at_ms(ms)), "2026-12-06T07:12:03.458+00:00");
    EXPECT_EQ(local_timestamp(at_ms(ms + 542)), "2026-12-06T07:12:04.000+00:00");
    EXPECT_EQ(local_timestamp(at_ms(-1)), "1969-12-31T23:59:59.999+00:00");
  }
  {
    ZoneScope zone("IST-5:30");  // POSIX signs are inverted: 5:30 east of UTC
    EXPECT_EQ(local_timestamp(at_ms(ms)), "2026-12-06T12:42:03.458+05:30");
  }
  {
    ZoneScope zone("XST3");
    EXPECT_EQ(local_timestamp(at_ms(ms)), "2026-12-06T04:12:03.458-03:00");
  }
}

TEST(Log, TextLineCarriesLevelAndTime) {
  ZoneScope zone("UTC0");
  EXPECT_EQ(format_log_line(LogFormat::kText, LogLevel::kWarn, at_ms(1796541123458), "disk full"),
            "[qvl W 2026-12-06T07:12:03.458+00:00] disk full");
}

TEST(Log, JsonLineIsOneValidObject) {
  ZoneScope zone("UTC0");
  // Quotes, backslashes, control characters, a newline, valid UTF-8 and a stray byte.
  const std::string message = "say \"hi\" \\ \x01\ttab\nnext é \xff end";
  const std::string line =
      format_log_line(LogFormat::kJson, LogLevel::kError, at_ms(1796541123458), message);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const nlohmann::json parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed.at("time"), "2026-12-06T07:12:03.458+00:00");
  EXPECT_EQ(parsed.at("level"), "error");
  EXPECT_EQ(parsed.at("message"), "say \"hi\" \\ \x01\ttab\nnext é \xEF\xBF\xBD end");
  // Truncated and overlong sequences and surrogates are replaced too.
  for (const std::string bad :
       {"\xC3", "\xE2\x82", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"}) {
    const nlohmann::json value =
        nlohmann::json::parse(format_log_line(LogFormat::kJson, LogLevel::kInfo, at_ms(0), bad));
    EXPECT_EQ(value.at("message").get<std::string>().substr(0, 3), "\xEF\xBF\xBD") << bad;
  }
}

TEST(Log, FormatIsChosenByName) {
  EXPECT_EQ(parse_log_format("text"), LogFormat::kText);
  EXPECT_EQ(parse_log_format("json"), LogFormat::kJson);
  EXPECT_THROW(parse_log_format("xml"), Error);
}

TEST(Log, MessagesGoToStderrInTheChosenFormat) {
  set_log_format(LogFormat::kJson);
  testing::internal::CaptureStderr();
  QVL_LOG(kWarn) << "model " << 2 << " ready";
  QVL_LOG(kDebug) << "hidden at the default level";
  const std::string out = testing::internal::GetCapturedStderr();
  set_log_format(LogFormat::kText);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\n'), out.size() - 1);  // the debug line was not written
  const nlohmann::json parsed = nlohmann::json::parse(out);
  EXPECT_EQ(parsed.at("level"), "warn");
  EXPECT_EQ(parsed.at("message"), "model 2 ready");
}

}  // namespace
}  // namespace qvl
