// Cancels generation work whose client went away or whose deadline passed.
//
// A connection is parked (suspended) while its request is in the queue, in prefill or
// generating without streaming, so the HTTP event loop does not see a client that leaves. The
// watcher polls those sockets for hang-up, so the engine sees the cancel flag at its next step.
// (find_connection_socket finds a socket from its address pair, for callers without the fd.)
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace qvl::server {

struct WatchEntry;

// The socket of this process connected local_addr:local_port <-> remote_addr:remote_port, or -1.
int find_connection_socket(const std::string& local_addr, int local_port,
                           const std::string& remote_addr, int remote_port);

// True when the peer has closed or reset the connection (never blocks).
bool peer_disconnected(int socket_fd);

enum class CancelReason : int { kNone = 0, kClientGone, kDeadline, kShutdown };

// What a job exposes to the watcher.
struct CancelState {
  std::atomic<bool> cancel{false};
  std::atomic<int> reason{0};
  void request(CancelReason why) {
    int expected = 0;
    reason.compare_exchange_strong(expected, static_cast<int>(why));
    cancel.store(true);
  }
  CancelReason why() const { return static_cast<CancelReason>(reason.load()); }
};

class ConnectionWatch {
 public:
  ConnectionWatch();
  ~ConnectionWatch();
  ConnectionWatch(const ConnectionWatch&) = delete;
  ConnectionWatch& operator=(const ConnectionWatch&) = delete;

  using Clock = std::chrono::steady_clock;
  class Registration;
  // Watches `socket_fd` (may be -1) and `deadline` until the Registration is destroyed.
  Registration watch(int socket_fd, Clock::time_point deadline, CancelState* state);

  // Cancels everything being watched (shutdown grace period over).
  void cancel_all(CancelReason reason);

  class Registration {
   public:
    Registration() = default;
    Registration(Registration&& other) noexcept;
    Registration& operator=(Registration&& other) noexcept;
    ~Registration();

   private:
    friend class ConnectionWatch;
    Registration(ConnectionWatch* owner, std::list<WatchEntry>::iterator it)
        : owner_(owner), it_(it) {}
    ConnectionWatch* owner_ = nullptr;
    std::list<WatchEntry>::iterator it_;
  };

 private:
  void run();
  void remove(std::list<WatchEntry>::iterator it);
  void wake();

  std::mutex mutex_;
  std::list<WatchEntry> entries_;
  bool stopping_ = false;
  int wake_fd_ = -1;  // eventfd: tells the polling thread that entries changed
  std::thread thread_;
};

struct WatchEntry {
  int socket_fd = -1;
  ConnectionWatch::Clock::time_point deadline;
  CancelState* state = nullptr;
  bool ignore_readable = false;  // the client pipelined data; only hang-up flags count
};

}  // namespace qvl::server
