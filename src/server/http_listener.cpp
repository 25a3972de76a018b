#include "server/http_listener.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace qvl::server {

ListeningSocket open_listening_socket(const std::string& host, int port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int looked_up =
      getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  if (looked_up != 0) {
    fail(ErrorCode::kIo,
         "cannot listen on " + host + ":" + service + ": " + gai_strerror(looked_up));
  }
  int last_error = 0;
  ListeningSocket result;
  for (addrinfo* address = found; address; address = address->ai_next) {
    const int fd = socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                          address->ai_protocol);
    if (fd < 0) {
      last_error = errno;
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, address->ai_addr, address->ai_addrlen) != 0 || listen(fd, backlog) != 0) {
      last_error = errno;
      close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
    result.fd = fd;
    result.port = bound.ss_family == AF_INET6
                      ? ntohs(reinterpret_cast<const sockaddr_in6&>(bound).sin6_port)
                      : ntohs(reinterpret_cast<const sockaddr_in&>(bound).sin_port);
    break;
  }
  freeaddrinfo(found);
  if (result.fd >= 0) return result;
  if (last_error == EADDRINUSE) {
    fail(ErrorCode::kIo, "port " + service + " is already in use on " + host +
                             " (another qvl serve or program listens there); stop it or choose "
                             "another --port");
  }
  fail(ErrorCode::kIo,
       "cannot listen on " + host + ":" + service + ": " + std::strerror(last_error));
}

}  // namespace qvl::server
