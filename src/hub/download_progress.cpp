#include "hub/download_progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace qvl::hub {

DownloadProgress::DownloadProgress(std::ostream& out, bool enabled, bool terminal)
    : out_(out), enabled_(enabled), terminal_(terminal) {}

void DownloadProgress::message(const std::string& line) {
  if (enabled_) out_ << line << "\n" << std::flush;
}

void DownloadProgress::begin_file(const std::string& name, int index, int count, int64_t total,
                                  int64_t resumed_from) {
  std::ostringstream label;  // (operator+ chains here trip a GCC 12 -Wrestrict false positive)
  if (count > 0) label << "[" << index << "/" << count << "] ";
  label << name;
  label_ = label.str();
  total_ = total;
  resumed_from_ = resumed_from;
  done_ = resumed_from;
  next_quarter_ = 1;
  while (total > 0 && next_quarter_ < 4 && resumed_from * 4 >= total * next_quarter_) {
    ++next_quarter_;  // steps already passed before a resume are not printed again
  }
  start_ = Clock::now();
  last_draw_ = Clock::time_point{};
  if (!enabled_) return;
  if (resumed_from > 0) {
    out_ << "  " << label_ << ": resuming at " << format_bytes(static_cast<double>(resumed_from))
         << "\n";
  }
  if (terminal_) out_ << "\r\033[K  " << status_line(done_) << std::flush;
}

void DownloadProgress::update(int64_t done) {
  done_ = done;
  if (!enabled_) return;
  if (terminal_) {
    const auto now = Clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    out_ << "\r\033[K  " << status_line(done) << std::flush;
    return;
  }
  // Plain output steps on bytes, not time, so logs stay short and reproducible.
  if (total_ <= 0) return;
  bool crossed = false;
  while (next_quarter_ < 4 && done * 4 >= total_ * next_quarter_) {
    ++next_quarter_;
    crossed = true;
  }
  if (crossed && done < total_) out_ << "  " << status_line(done) << "\n" << std::flush;
}

void DownloadProgress::end_file() {
  if (!enabled_) return;
  const double seconds = seconds_since_start();
  const double fetched = static_cast<double>(done_ - resumed_from_);
  if (terminal_) out_ << "\r\033[K";
  out_ << "  " << label_ << ": " << format_bytes(static_cast<double>(done_)) << " done in "
       << format_duration(seconds);
  if (seconds > 0.0) out_ << " (" << format_bytes(fetched / seconds) << "/s)";
  out_ << "\n" << std::flush;
}

std::string DownloadProgress::status_line(int64_t done) const {
  std::string line = label_ + "  " + format_bytes(static_cast<double>(done));
  if (total_ > 0) {
    line += " / " + format_bytes(static_cast<double>(total_)) + "  " +
            std::to_string(done * 100 / total_) + "%";
  }
  const double seconds = seconds_since_start();
  const double fetched = static_cast<double>(done - resumed_from_);
  if (seconds >= 0.5 && fetched > 0) {  // earlier rates are mostly noise
    const double rate = fetched / seconds;
    line += "  " + format_bytes(rate) + "/s";
    if (total_ > 0) line += "  ETA " + format_duration(static_cast<double>(total_ - done) / rate);
  }
  return line;
}

double DownloadProgress::seconds_since_start() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::string DownloadProgress::format_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return text;
}

std::string DownloadProgress::format_duration(double seconds) {
  if (!(seconds >= 0.0) || seconds > 360000.0) return "?";
  if (seconds < 60.0) {
    char text[16];
    std::snprintf(text, sizeof text, seconds < 10.0 ? "%.1fs" : "%.0fs", seconds);
    return text;
  }
  const auto total = static_cast<long>(seconds + 0.5);
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  } else {
    std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  }
  return text;
}

bool stderr_is_terminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDERR_FILENO) == 1 && !(term && std::strcmp(term, "dumb") == 0);
}

}  // namespace qvl::hub
