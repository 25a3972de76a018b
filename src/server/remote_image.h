// Fetching http(s) image URLs (only with `qvl serve --allow-remote-images`), defensively: a size
// cap enforced while downloading, one overall deadline, at most a few redirects, and every
// connection pinned to an address that was checked first, so neither the URL nor a redirect nor
// a DNS answer can make the server talk to loopback, private, link-local or other internal
// addresses (SSRF).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace qvl::server {

// False for loopback, private (RFC 1918, ULA), link-local, CGNAT, multicast, unspecified,
// documentation/benchmark ranges and IPv4-mapped forms of those.
bool is_public_address(const sockaddr* address);

struct RemoteFetchOptions {
  size_t max_bytes = 16u << 20;
  std::chrono::milliseconds timeout{10000};  // for the whole fetch, redirects included
  int max_redirects = 3;
  std::function<bool(const sockaddr*)> address_allowed = is_public_address;
};

// Throws ApiError (400, naming `param`) when the URL is bad, the host is not allowed, the
// server answers with an error, the image is too large or the deadline passes.
std::vector<uint8_t> fetch_remote_image(const std::string& url, const RemoteFetchOptions& options,
                                        const std::string& param);

}  // namespace qvl::server
