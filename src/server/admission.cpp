#include "server/admission.h"

#include <algorithm>

namespace qvl::server {

Admission::Admission(int parallel, int queue)
    : parallel_(std::max(parallel, 1)), queue_(std::max(queue, 0)) {}

Admission::Slot& Admission::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = other.owner_;
    other.owner_ = nullptr;
  }
  return *this;
}

void Admission::Slot::release() {
  if (owner_) owner_->leave();
  owner_ = nullptr;
}

Admission::Outcome Admission::enter(Slot& slot, const std::function<bool()>& keep_waiting,
                                    std::chrono::milliseconds poll) {
  std::unique_lock lock(mutex_);
  if (waiting_.empty() && active_ < parallel_) {
    ++active_;
    slot = Slot(this);
    return Outcome::kAdmitted;
  }
  if (static_cast<int>(waiting_.size()) >= queue_) return Outcome::kQueueFull;
  const uint64_t ticket = next_ticket_++;
  waiting_.push_back(ticket);
  for (;;) {
    if (waiting_.front() == ticket && active_ < parallel_) {
      waiting_.pop_front();
      ++active_;
      slot = Slot(this);
      // The next in line may also fit.
      slot_freed_.notify_all();
      return Outcome::kAdmitted;
    }
    slot_freed_.wait_for(lock, poll);
    bool stay = true;
    if (keep_waiting) {
      lock.unlock();
      stay = keep_waiting();
      lock.lock();
    }
    if (!stay) {
      waiting_.erase(std::find(waiting_.begin(), waiting_.end(), ticket));
      slot_freed_.notify_all();
      return Outcome::kGaveUp;
    }
  }
}

bool Admission::try_enter(Slot& slot) {
  std::lock_guard lock(mutex_);
  if (!waiting_.empty() || active_ >= parallel_) return false;
  ++active_;
  slot = Slot(this);
  return true;
}

void Admission::leave() {
  {
    std::lock_guard lock(mutex_);
    --active_;
  }
  slot_freed_.notify_all();
}

int Admission::active() const {
  std::lock_guard lock(mutex_);
  return active_;
}

int Admission::queued() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(waiting_.size());
}

}  // namespace qvl::server
