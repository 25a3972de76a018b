// Admission control: at most `parallel` requests generate at once and at most `queue` wait, in
// arrival order; anyone beyond that is turned away at once (the server answers 429).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

namespace qvl::server {

class Admission {
 public:
  Admission(int parallel, int queue);

  // Releases its generation slot when destroyed.
  class Slot {
   public:
    Slot() = default;
    explicit Slot(Admission* owner) : owner_(owner) {}
    Slot(Slot&& other) noexcept : owner_(other.owner_) { other.owner_ = nullptr; }
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { release(); }
    explicit operator bool() const { return owner_ != nullptr; }
    void release();

   private:
    Admission* owner_ = nullptr;
  };

  enum class Outcome { kAdmitted, kQueueFull, kGaveUp };

  // Takes a slot, waiting in the queue if needed. While waiting, `keep_waiting` is asked every
  // `poll` (e.g. whether the client is still connected); false gives up the place in the queue.
  Outcome enter(Slot& slot, const std::function<bool()>& keep_waiting,
                std::chrono::milliseconds poll = std::chrono::milliseconds(50));

  // Takes a slot only if one is free and nobody waits for it (never jumps the queue): a
  // per-page document request widens its share this way while the server has room.
  bool try_enter(Slot& slot);

  int active() const;
  int queued() const;
  int parallel() const { return parallel_; }

 private:
  void leave();

  const int parallel_;
  const int queue_;
  mutable std::mutex mutex_;
  std::condition_variable slot_freed_;
  int active_ = 0;
  std::deque<uint64_t> waiting_;  // tickets in arrival order
  uint64_t next_ticket_ = 0;
};

}  // namespace qvl::server
