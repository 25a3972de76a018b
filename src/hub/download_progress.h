// Download progress for people: on a terminal one redrawn line per file with bytes, rate and
// ETA; elsewhere (logs, CI) plain lines at 25% steps and when a file is done.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace qvl::hub {

class DownloadProgress {
 public:
  // `enabled` false prints nothing; `terminal` selects the redrawn bar.
  DownloadProgress(std::ostream& out, bool enabled, bool terminal);

  void message(const std::string& line);
  // A file of `total` bytes (-1 unknown) starts; `resumed_from` bytes are already on disk. The
  // label reads "[index/count] name", or just the name when count is 0.
  void begin_file(const std::string& name, int index, int count, int64_t total,
                  int64_t resumed_from);
  // `done` bytes of the file are on disk now (including resumed ones).
  void update(int64_t done);
  void end_file();

  // "12.3 MiB" style.
  static std::string format_bytes(double bytes);
  // "1:02:03" / "2:03" / "5s" style.
  static std::string format_duration(double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  std::string status_line(int64_t done) const;
  double seconds_since_start() const;

  std::ostream& out_;
  bool enabled_;
  bool terminal_;
  std::string label_;
  int64_t total_ = -1;
  int64_t resumed_from_ = 0;
  int64_t done_ = 0;
  int next_quarter_ = 1;
  Clock::time_point start_;
  Clock::time_point last_draw_;
};

// True when stderr is a terminal (and TERM is not "dumb").
bool stderr_is_terminal();

}  // namespace qvl::hub
