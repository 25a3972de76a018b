#include "server/http_connections.h"

#include <sys/socket.h>

#include <algorithm>

#include "server/http_gate.h"

namespace qvl::server {

using Clock = std::chrono::steady_clock;

void write_raw_response(int fd, int status, const std::string& body,
                        const std::string& extra_headers) {
  std::string response =
      "HTTP/1.1 " + std::to_string(status) + " " + http_reason_phrase(status) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n";
  if (extra_headers.find("Retry-After") == std::string::npos && (status == 503 || status == 429)) {
    response += "Retry-After: 1\r\n";
  }
  response += extra_headers + "\r\n" + body;
  // Nothing else is being written on this connection; a small answer fits the empty socket
  // buffer, and a client that does not read loses it.
  [[maybe_unused]] const ssize_t sent =
      send(fd, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

ConnectionTable::ConnectionTable(ConnectionLimits limits, RefusedFn refused, ErrorBodyFn error_body)
    : limits_(limits), refused_(std::move(refused)), error_body_(std::move(error_body)) {
  reaper_ = std::thread([this] { run(); });
}

ConnectionTable::~ConnectionTable() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  reaper_.join();
}

ConnectionState* ConnectionTable::add(int fd, std::string ip) {
  std::lock_guard lock(mutex_);
  ConnectionState& connection = connections_.emplace_back();
  connection.fd = fd;
  connection.ip = std::move(ip);
  connection.phase_start = Clock::now();
  const int from_ip = ++per_ip_[connection.ip];
  const int open = static_cast<int>(connections_.size());
  if (draining_) {
    close_locked(connection);
  } else if (limits_.max_connections > 0 && open > limits_.max_connections) {
    refuse_locked(connection, 503,
                  "the server has " + std::to_string(limits_.max_connections) +
                      " connections open (--max-connections); retry shortly",
                  "too_many_connections");
  } else if (limits_.max_connections_per_ip > 0 && from_ip > limits_.max_connections_per_ip) {
    refuse_locked(connection, 503,
                  "this client address has " + std::to_string(limits_.max_connections_per_ip) +
                      " connections open (--max-connections-per-ip); reuse or close some",
                  "too_many_connections");
  }
  return &connection;
}

void ConnectionTable::remove(ConnectionState* connection) {
  if (!connection) return;
  std::lock_guard lock(mutex_);
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (&*it != connection) continue;
    auto count = per_ip_.find(it->ip);
    if (count != per_ip_.end() && --count->second <= 0) per_ip_.erase(count);
    connections_.erase(it);
    return;
  }
}

bool ConnectionTable::enter(ConnectionState* connection, ConnectionPhase phase,
                            const std::string& path) {
  std::lock_guard lock(mutex_);
  if (connection->closed) return false;
  connection->phase = phase;
  connection->phase_start = Clock::now();
  connection->last_body_bytes = connection->phase_start;
  connection->body_bytes = 0;
  if (!path.empty() || phase == ConnectionPhase::kAwaitingHeaders) connection->path = path;
  if (draining_ && phase == ConnectionPhase::kAwaitingHeaders) close_locked(*connection);
  return !connection->closed;
}

void ConnectionTable::add_body_bytes(ConnectionState* connection, size_t bytes) {
  std::lock_guard lock(mutex_);
  connection->body_bytes += bytes;
  connection->last_body_bytes = Clock::now();
}

void ConnectionTable::refuse(ConnectionState* connection, int status, const std::string& message,
                             const std::string& code) {
  std::lock_guard lock(mutex_);
  if (!connection->closed) refuse_locked(*connection, status, message, code);
}

void ConnectionTable::refuse_lingering(ConnectionState* connection, int status,
                                       const std::string& body, const std::string& extra_headers) {
  std::lock_guard lock(mutex_);
  if (connection->closed) return;
  write_raw_response(connection->fd, status, body, extra_headers);
  refused_(connection->path, status);
  // No FIN yet: some clients give up a request whose connection half-closes while they still
  // send. The answer is complete (Content-Length); the close comes once the body is in.
  connection->phase = ConnectionPhase::kLingering;
  connection->phase_start = Clock::now();
}

void ConnectionTable::refuse_locked(ConnectionState& connection, int status,
                                    const std::string& message, const std::string& code) {
  write_raw_response(connection.fd, status, error_body_(status, message, code));
  refused_(connection.path, status);
  close_locked(connection);
}

void ConnectionTable::close_locked(ConnectionState& connection) {
  if (connection.closed) return;
  connection.closed = true;
  // The event loop sees the hang-up and closes (and forgets) the connection itself.
  shutdown(connection.fd, SHUT_RDWR);
}

void ConnectionTable::drain() {
  {
    std::lock_guard lock(mutex_);
    draining_ = true;
  }
  wake_.notify_all();
}

void ConnectionTable::close_all() {
  std::lock_guard lock(mutex_);
  for (ConnectionState& connection : connections_) close_locked(connection);
}

size_t ConnectionTable::size() {
  std::lock_guard lock(mutex_);
  return connections_.size();
}

void ConnectionTable::check_locked(ConnectionState& connection, Clock::time_point now) {
  if (connection.closed) return;
  const double in_phase = std::chrono::duration<double>(now - connection.phase_start).count();
  switch (connection.phase) {
    case ConnectionPhase::kAwaitingHeaders:
      // Idle keep-alive connections and clients that trickle their headers alike.
      if (draining_ || in_phase > limits_.header_timeout_seconds) close_locked(connection);
      return;
    case ConnectionPhase::kReadingBody: {
      if (draining_) {
        refuse_locked(connection, 503, "the server is shutting down; retry the request",
                      "shutting_down");
        return;
      }
      const double silent = std::chrono::duration<double>(now - connection.last_body_bytes).count();
      const double owed =
          limits_.min_body_bytes_per_second * (in_phase - limits_.body_stall_seconds);
      if (silent > limits_.body_stall_seconds ||
          static_cast<double>(connection.body_bytes) < owed) {
        refuse_locked(connection, 408,
                      "the request body did not arrive in time (at least " +
                          std::to_string(static_cast<int>(limits_.min_body_bytes_per_second)) +
                          " bytes/s, no pause over --read-timeout); send the whole body at once",
                      "request_timeout");
      }
      return;
    }
    case ConnectionPhase::kHandling:
      return;  // the handler and the engine's deadlines own it
    case ConnectionPhase::kLingering:
      if (in_phase > kLingerSeconds) close_locked(connection);
      return;
  }
}

void ConnectionTable::run() {
  // Deadlines are met within a tenth of the shortest one (at most 100 ms late).
  const double shortest = std::min(limits_.header_timeout_seconds, limits_.body_stall_seconds);
  const auto tick = std::chrono::milliseconds(
      std::clamp(static_cast<int64_t>(shortest * 100), int64_t{5}, int64_t{100}));
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, tick);
    const auto now = Clock::now();
    for (ConnectionState& connection : connections_) check_locked(connection, now);
  }
}

}  // namespace qvl::server
