#include "server/render_gate.h"

namespace qvl::server {

RenderGate::Ticket::~Ticket() {
  if (gate_) gate_->leave();
}

RenderGate::Ticket RenderGate::enter(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  if (!freed_.wait_for(lock, wait, [this] { return free_ > 0; })) return Ticket(nullptr);
  --free_;
  return Ticket(this);
}

void RenderGate::leave() {
  {
    std::lock_guard lock(mutex_);
    ++free_;
  }
  freed_.notify_one();
}

}  // namespace qvl::server
