#include "engine/draft_tokens.h"

#include <algorithm>

namespace qvl {
namespace {

// Weight of the newest step in the moving averages.
constexpr double kNewest = 0.25;

void average_in(double& average, double value) {
  average = average == 0 ? value : (1 - kNewest) * average + kNewest * value;
}

}  // namespace

int64_t DraftPolicy::cap(int64_t room) {
  if (paused_ > 0) {
    --paused_;
    return 0;
  }
  return std::min(cap_, room);
}

void DraftPolicy::pause() {
  paused_ = pause_length_;
  pause_length_ = std::min(2 * pause_length_, kLongestPause);
  cap_ = 1;
  drafted_steps_ = 0;
  draft_rate_ = 0;
}

void DraftPolicy::record(int64_t drafted, int64_t accepted, double step_ms) {
  if (step_ms <= 0) step_ms = 1e-3;
  if (drafted <= 0) {
    average_in(plain_rate_, 1.0 / step_ms);
    return;
  }
  average_in(draft_rate_, static_cast<double>(1 + accepted) / step_ms);
  ++drafted_steps_;
  if (accepted == drafted) {
    cap_ = std::min<int64_t>(2 * cap_, 64);
  } else if (accepted == 0) {
    cap_ /= 2;
  }
  // A few drafted steps make an average worth comparing.
  const bool slower = drafted_steps_ >= 4 && plain_rate_ > 0 && draft_rate_ < plain_rate_;
  if (cap_ == 0 || slower) {
    pause();
  } else if (drafted_steps_ >= 4 && draft_rate_ > plain_rate_) {
    pause_length_ = kFirstPause;  // drafting pays here: a later miss pauses only briefly
  }
}

}  // namespace qvl
