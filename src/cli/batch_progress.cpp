#include "cli/batch_progress.h"

#include <cstdio>
#include <string>
#include <utility>

namespace qvl::cli {
namespace {

std::string duration_text(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  } else {
    std::snprintf(text, sizeof text, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return text;
}

}  // namespace

BatchProgress::BatchProgress(int64_t total, int64_t skipped, bool terminal, std::string unit)
    : total_(total), terminal_(terminal), unit_(std::move(unit)) {
  totals_.skipped = skipped;
}

void BatchProgress::finished(const std::string& id, const std::string& error, int64_t prompt_tokens,
                             int64_t completion_tokens) {
  std::lock_guard lock(mutex_);
  (error.empty() ? totals_.done : totals_.failed) += 1;
  totals_.prompt_tokens += prompt_tokens;
  totals_.completion_tokens += completion_tokens;
  const int64_t count = totals_.done + totals_.failed;
  if (terminal_) {
    if (!error.empty()) {
      std::fprintf(stderr, "\r\033[K%s: %s\n", id.c_str(), error.c_str());
    }
    draw_locked();
  } else {
    std::fprintf(stderr, "[%lld/%lld] %s %s%s\n", static_cast<long long>(count),
                 static_cast<long long>(total_), id.c_str(),
                 error.empty() ? "ok" : "failed: ", error.c_str());
  }
}

void BatchProgress::redraw() {
  std::lock_guard lock(mutex_);
  if (terminal_) draw_locked();
}

void BatchProgress::note(const std::string& message) {
  std::lock_guard lock(mutex_);
  std::fprintf(stderr, terminal_ ? "\r\033[K%s\n" : "%s\n", message.c_str());
  if (terminal_) draw_locked();
}

void BatchProgress::draw_locked() {
  const int64_t count = totals_.done + totals_.failed;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? count / elapsed : 0;  // per second
  constexpr int kWidth = 30;
  const int filled = total_ > 0 ? static_cast<int>(kWidth * count / total_) : kWidth;
  const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
  const std::string eta =
      rate > 0 ? duration_text(static_cast<double>(total_ - count) / rate) : std::string("--");
  std::fprintf(stderr, "\r\033[K[%s] %lld/%lld  %lld failed  %.1f %s/min  ETA %s  elapsed %s",
               bar.c_str(), static_cast<long long>(count), static_cast<long long>(total_),
               static_cast<long long>(totals_.failed), rate * 60, unit_.c_str(), eta.c_str(),
               duration_text(elapsed).c_str());
  std::fflush(stderr);
}

BatchTotals BatchProgress::totals() {
  std::lock_guard lock(mutex_);
  return totals_;
}

double BatchProgress::per_minute() {
  std::lock_guard lock(mutex_);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return elapsed > 0 ? (totals_.done + totals_.failed) * 60.0 / elapsed : 0;
}

std::string BatchProgress::summary(bool interrupted) {
  const double rate = per_minute();
  std::lock_guard lock(mutex_);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char text[512];
  std::snprintf(text, sizeof text,
                "%sdone %lld, failed %lld, skipped %lld (already in the output), not run %lld; "
                "tokens %lld prompt + %lld generated; %.1f %s/min over %s",
                interrupted ? "interrupted: " : "", static_cast<long long>(totals_.done),
                static_cast<long long>(totals_.failed), static_cast<long long>(totals_.skipped),
                static_cast<long long>(total_ - totals_.done - totals_.failed),
                static_cast<long long>(totals_.prompt_tokens),
                static_cast<long long>(totals_.completion_tokens), rate, unit_.c_str(),
                duration_text(elapsed).c_str());
  return std::string(terminal_ ? "\r\033[K" : "") + text;
}

}  // namespace qvl::cli
