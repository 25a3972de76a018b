// Every open client connection, what it is doing, and the limits that hold while it is read:
// a deadline for the whole header section (keep-alive idle time included), a body that must
// keep arriving at a minimum rate, caps on open connections in all and per client address.
// A thread checks the deadlines and shuts a late socket down; the event loop then closes it.
// Refusals are written straight to the socket, so none of this costs a worker.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <thread>

struct MHD_Connection;

namespace qvl::server {

struct ConnectionLimits {
  double header_timeout_seconds = 10;  // from accept (or the previous response) to the last header
  double body_stall_seconds = 10;      // longest silence while a body is read
  double min_body_bytes_per_second = 16 * 1024;  // average, after the first body_stall_seconds
  int max_connections = 1024;
  int max_connections_per_ip = 0;  // 0 = none
};

// kLingering: a refusal was written while the client may still be sending its body; the rest is
// read and dropped for a moment so that closing does not reset the connection (which would
// destroy the refusal before the client reads it).
enum class ConnectionPhase { kAwaitingHeaders, kReadingBody, kHandling, kLingering };

struct ConnectionState {
  int fd = -1;
  std::string ip;
  ConnectionPhase phase = ConnectionPhase::kAwaitingHeaders;
  std::chrono::steady_clock::time_point phase_start;
  std::chrono::steady_clock::time_point last_body_bytes;
  uint64_t body_bytes = 0;
  std::string path;     // of the request being read (metrics of refusals)
  bool closed = false;  // shut down by us; the event loop is closing it
};

class ConnectionTable {
 public:
  // `refused(path, status)` is told about every request refused here (for the metrics);
  // `error_body(status, message, code)` makes the JSON body of such a refusal.
  using RefusedFn = std::function<void(const std::string& path, int status)>;
  using ErrorBodyFn = std::function<std::string(int, const std::string&, const std::string&)>;
  ConnectionTable(ConnectionLimits limits, RefusedFn refused, ErrorBodyFn error_body);
  ~ConnectionTable();

  // A new connection. Over a cap it is answered 503 and shut down at once (still returned, and
  // removed as any other when the event loop closes it).
  ConnectionState* add(int fd, std::string ip);
  void remove(ConnectionState* connection);

  // Phase changes; false when the connection was already shut down (do not answer it).
  bool enter(ConnectionState* connection, ConnectionPhase phase, const std::string& path = {});
  void add_body_bytes(ConnectionState* connection, size_t bytes);
  // Writes a refusal (`status`, JSON body, Connection: close) to a connection whose request is
  // being read, and shuts it down.
  void refuse(ConnectionState* connection, int status, const std::string& message,
              const std::string& code);
  // Writes the refusal and lets the connection linger (see kLingering).
  // `extra_headers` are sent as they are ("Name: value\r\n" lines).
  void refuse_lingering(ConnectionState* connection, int status, const std::string& body,
                        const std::string& extra_headers);

  // Shutdown: from now on, connections waiting for a request or sending one are closed.
  void drain();
  // Shuts every socket down (the last step of a shutdown).
  void close_all();
  size_t size();

 private:
  void run();
  void check_locked(ConnectionState& connection, std::chrono::steady_clock::time_point now);
  void refuse_locked(ConnectionState& connection, int status, const std::string& message,
                     const std::string& code);
  void close_locked(ConnectionState& connection);

  ConnectionLimits limits_;
  RefusedFn refused_;
  ErrorBodyFn error_body_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::list<ConnectionState> connections_;
  std::map<std::string, int> per_ip_;
  bool draining_ = false;
  bool stopping_ = false;
  std::thread reaper_;
};

// Sends a complete small response with Connection: close straight on a socket (best effort,
// never blocks).
void write_raw_response(int fd, int status, const std::string& body,
                        const std::string& extra_headers = {});

// How long a refused connection lingers at most.
constexpr double kLingerSeconds = 2;

}  // namespace qvl::server
