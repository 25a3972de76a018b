// Bounds how many documents render at once across the server. Each render is a media worker
// process busy for up to --max-document-seconds; a request renders once it holds a generation
// slot (qvl batch before its engine call), and with many slots (--parallel) a burst of PDFs would
// otherwise start a renderer per slot.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace qvl::server {

class RenderGate {
 public:
  explicit RenderGate(int places) : free_(places) {}
  RenderGate(const RenderGate&) = delete;
  RenderGate& operator=(const RenderGate&) = delete;

  // Holds one place until destroyed.
  class Ticket {
   public:
    explicit Ticket(RenderGate* gate) : gate_(gate) {}
    Ticket(Ticket&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket();
    bool held() const { return gate_ != nullptr; }

   private:
    RenderGate* gate_;
  };

  // A held ticket, or an empty one when no place freed within `wait`.
  Ticket enter(std::chrono::milliseconds wait);

 private:
  void leave();

  std::mutex mutex_;
  std::condition_variable freed_;
  int free_;
};

}  // namespace qvl::server
