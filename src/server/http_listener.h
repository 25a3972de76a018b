// The listening socket, opened by us rather than by the HTTP library so that the address is
// exclusive: SO_REUSEADDR only (restarts while old connections linger in TIME_WAIT), never
// SO_REUSEPORT, so a second server on the same port fails instead of taking half the traffic.
#pragma once

#include <string>

namespace qvl::server {

struct ListeningSocket {
  int fd = -1;
  int port = 0;  // the bound port (the chosen one for port 0)
};

// Throws qvl::Error (kIo) naming the address: "port 8080 is already in use ..." when busy.
ListeningSocket open_listening_socket(const std::string& host, int port, int backlog);

}  // namespace qvl::server
