// Progress of `qvl batch` on stderr: on a terminal one bar redrawn in place (done/total, failed,
// rate, ETA); otherwise one plain line per finished input, for logs. Then a summary.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace qvl::cli {

struct BatchTotals {
  int64_t done = 0;  // answered (written with an answer)
  int64_t failed = 0;
  int64_t skipped = 0;  // already in the output file
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

class BatchProgress {
 public:
  // `total`: inputs to run in this invocation (skipped ones excluded). `unit` names them in the
  // rate ("images", or "pages" when every input is a document page).
  BatchProgress(int64_t total, int64_t skipped, bool terminal, std::string unit);

  // Thread-safe. `error` is empty for an answered input.
  void finished(const std::string& id, const std::string& error, int64_t prompt_tokens,
                int64_t completion_tokens);
  // Redraws the bar (terminal only); called periodically and on events.
  void redraw();
  void note(const std::string& message);  // a line of its own, above the bar
  BatchTotals totals();
  // Inputs per minute over this invocation.
  double per_minute();
  std::string summary(bool interrupted);

 private:
  void draw_locked();

  std::mutex mutex_;
  const int64_t total_;
  const bool terminal_;
  const std::string unit_;
  BatchTotals totals_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace qvl::cli
