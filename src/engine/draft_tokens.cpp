#include "engine/draft_tokens.h"

#include <algorithm>

namespace qvl {

int64_t DraftPolicy::cap(int64_t room) {
  if (paused_ > 0) {
    --paused_;
    return 0;
  }
  return std::min(std::max<int64_t>(cap_, 1), room);
}

void DraftPolicy::record(int64_t drafted, int64_t accepted) {
  if (drafted <= 0) return;
  if (accepted == drafted) {
    cap_ = std::min<int64_t>(2 * std::max<int64_t>(cap_, 1), 64);
  } else if (accepted == 0) {
    cap_ /= 2;
    if (cap_ == 0) paused_ = kPauseSteps;
  }
}

}  // namespace qvl
