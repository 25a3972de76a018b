#include "server/connection_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace qvl::server {
namespace {

// "1.2.3.4" / "::1" and the port of a socket address.
bool describe(const sockaddr_storage& address, std::string& host, int& port) {
  char buffer[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    if (!inet_ntop(AF_INET, &v4.sin_addr, buffer, sizeof(buffer))) return false;
    port = ntohs(v4.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    if (!inet_ntop(AF_INET6, &v6.sin6_addr, buffer, sizeof(buffer))) return false;
    port = ntohs(v6.sin6_port);
  } else {
    return false;
  }
  host = buffer;
  return true;
}

bool socket_matches(int fd, const std::string& local_addr, int local_port,
                    const std::string& remote_addr, int remote_port) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  std::string host;
  int port = 0;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return false;
  if (!describe(address, host, port) || port != remote_port || host != remote_addr) return false;
  length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return false;
  return describe(address, host, port) && port == local_port && host == local_addr;
}

}  // namespace

int find_connection_socket(const std::string& local_addr, int local_port,
                           const std::string& remote_addr, int remote_port) {
  // A handler thread serves one connection at a time, often for several keep-alive requests.
  thread_local int cached_fd = -1;
  if (cached_fd >= 0 &&
      socket_matches(cached_fd, local_addr, local_port, remote_addr, remote_port)) {
    return cached_fd;
  }
  cached_fd = -1;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    if (socket_matches(static_cast<int>(fd), local_addr, local_port, remote_addr, remote_port)) {
      cached_fd = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return cached_fd;
}

bool peer_disconnected(int socket_fd) {
  if (socket_fd < 0) return false;
  pollfd entry{socket_fd, POLLRDHUP, 0};
  if (poll(&entry, 1, 0) <= 0) return false;
  return (entry.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

ConnectionWatch::ConnectionWatch() : wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  thread_ = std::thread([this] { run(); });
}

ConnectionWatch::~ConnectionWatch() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake();
  thread_.join();
  if (wake_fd_ >= 0) close(wake_fd_);
}

ConnectionWatch::Registration ConnectionWatch::watch(int socket_fd, Clock::time_point deadline,
                                                     CancelState* state) {
  std::list<WatchEntry>::iterator it;
  {
    std::lock_guard lock(mutex_);
    it = entries_.insert(entries_.end(), WatchEntry{socket_fd, deadline, state, false});
  }
  wake();
  return Registration(this, it);
}

void ConnectionWatch::cancel_all(CancelReason reason) {
  std::lock_guard lock(mutex_);
  for (WatchEntry& entry : entries_) entry.state->request(reason);
}

void ConnectionWatch::remove(std::list<WatchEntry>::iterator it) {
  {
    std::lock_guard lock(mutex_);
    entries_.erase(it);
  }
  wake();
}

void ConnectionWatch::wake() {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = write(wake_fd_, &one, sizeof(one));
}

void ConnectionWatch::run() {
  std::vector<pollfd> fds;
  std::vector<WatchEntry*> owners;
  for (;;) {
    auto timeout = std::chrono::milliseconds(1000);
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    owners.assign(1, nullptr);
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      const auto now = Clock::now();
      for (WatchEntry& entry : entries_) {
        if (entry.state->cancel.load()) continue;
        if (now >= entry.deadline) {
          entry.state->request(CancelReason::kDeadline);
          continue;
        }
        timeout = std::min(
            timeout, std::chrono::duration_cast<std::chrono::milliseconds>(entry.deadline - now) +
                         std::chrono::milliseconds(1));
        if (entry.socket_fd < 0) continue;
        fds.push_back(
            pollfd{entry.socket_fd, static_cast<short>(entry.ignore_readable ? 0 : POLLRDHUP), 0});
        owners.push_back(&entry);
      }
    }
    // Without a wake-up fd, fall back to polling every 10 ms.
    if (wake_fd_ < 0) timeout = std::min(timeout, std::chrono::milliseconds(10));
    const int ready = poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
    if (ready <= 0) continue;
    if (fds[0].revents & POLLIN) {
      uint64_t count = 0;
      [[maybe_unused]] const ssize_t got = read(wake_fd_, &count, sizeof(count));
    }
    std::lock_guard lock(mutex_);
    for (size_t i = 1; i < fds.size(); ++i) {
      // Entries are only erased under the lock and their removal wakes us before this loop
      // could see a stale pointer: check that the entry is still listed.
      if (fds[i].revents == 0) continue;
      bool listed = false;
      for (WatchEntry& entry : entries_) listed = listed || &entry == owners[i];
      if (!listed) continue;
      if (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
        owners[i]->state->request(CancelReason::kClientGone);
      } else {
        owners[i]->ignore_readable = true;
      }
    }
  }
}

ConnectionWatch::Registration::Registration(Registration&& other) noexcept
    : owner_(other.owner_), it_(other.it_) {
  other.owner_ = nullptr;
}

ConnectionWatch::Registration& ConnectionWatch::Registration::operator=(
    Registration&& other) noexcept {
  if (this != &other) {
    if (owner_) owner_->remove(it_);
    owner_ = other.owner_;
    it_ = other.it_;
    other.owner_ = nullptr;
  }
  return *this;
}

ConnectionWatch::Registration::~Registration() {
  if (owner_) owner_->remove(it_);
}

}  // namespace qvl::server
