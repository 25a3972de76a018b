// A fair (FIFO) lock: concurrent generations take turns one model step at a time, so no request
// starves while another decodes a long answer.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace qvl {

class TurnLock {
 public:
  void lock() {
    std::unique_lock<std::mutex> l(mutex_);
    const uint64_t ticket = next_ticket_++;
    turn_.wait(l, [&] { return serving_ == ticket; });
  }
  void unlock() {
    std::lock_guard<std::mutex> l(mutex_);
    ++serving_;
    turn_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable turn_;
  uint64_t next_ticket_ = 0;
  uint64_t serving_ = 0;
};

}  // namespace qvl
