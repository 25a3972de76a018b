#include "server/remote_image.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstring>
#include <memory>

#include "server/api_error.h"

namespace qvl::server {
namespace {

using Clock = std::chrono::steady_clock;

struct Url {
  std::string scheme;  // http or https
  std::string host;    // without brackets for IPv6 literals
  int port = 0;
  std::string target;  // path and query
};

[[noreturn]] void fail_fetch(const std::string& param, const std::string& message) {
  fail_request(param, message, "image_fetch_failed");
}

Url parse_url(const std::string& text, const std::string& param) {
  Url url;
  const size_t scheme_end = text.find("://");
  if (scheme_end == std::string::npos) fail_fetch(param, "image URL has no scheme");
  url.scheme = text.substr(0, scheme_end);
  if (url.scheme != "http" && url.scheme != "https") {
    fail_fetch(param, "image URLs must use http or https");
  }
  const size_t authority_start = scheme_end + 3;
  const size_t path_start = text.find_first_of("/?#", authority_start);
  const std::string authority = text.substr(authority_start, path_start - authority_start);
  url.target = path_start == std::string::npos ? "/" : text.substr(path_start);
  if (const size_t hash = url.target.find('#'); hash != std::string::npos) url.target.resize(hash);
  if (url.target.empty() || url.target[0] != '/') url.target = "/" + url.target;
  if (authority.find('@') != std::string::npos) {
    fail_fetch(param, "image URLs with user:password@ are not accepted");
  }
  std::string port_text;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) fail_fetch(param, "image URL has a malformed IPv6 host");
    url.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') fail_fetch(param, "image URL has a malformed host");
      port_text = authority.substr(close + 2);
    }
  } else {
    const size_t colon = authority.find(':');
    url.host = authority.substr(0, colon);
    if (colon != std::string::npos) port_text = authority.substr(colon + 1);
  }
  if (url.host.empty()) fail_fetch(param, "image URL has no host");
  url.port = url.scheme == "https" ? 443 : 80;
  if (!port_text.empty()) {
    if (port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos) {
      fail_fetch(param, "image URL has an invalid port");
    }
    url.port = std::stoi(port_text);
    if (url.port < 1 || url.port > 65535) fail_fetch(param, "image URL has an invalid port");
  }
  for (char c : url.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      fail_fetch(param, "image URL contains spaces or control characters; percent-encode them");
    }
  }
  return url;
}

// Resolves `host` and returns one address as text, after checking that every address it
// resolves to is allowed (so a mixed DNS answer cannot sneak an internal address in).
std::string resolve_allowed(const Url& url, const RemoteFetchOptions& options,
                            const std::string& param) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(url.host.c_str(), nullptr, &hints, &found) != 0 || !found) {
    fail_fetch(param, "cannot resolve the image host '" + url.host.substr(0, 255) + "'");
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(found, freeaddrinfo);
  std::string chosen;
  for (const addrinfo* it = found; it; it = it->ai_next) {
    if (!options.address_allowed(it->ai_addr)) {
      fail_fetch(param, "image host '" + url.host.substr(0, 255) +
                            "' resolves to a loopback, private or otherwise internal address, "
                            "which this server does not fetch from");
    }
    if (chosen.empty()) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* raw = it->ai_family == AF_INET
                            ? static_cast<const void*>(
                                  &reinterpret_cast<const sockaddr_in*>(it->ai_addr)->sin_addr)
                            : static_cast<const void*>(
                                  &reinterpret_cast<const sockaddr_in6*>(it->ai_addr)->sin6_addr);
      if (inet_ntop(it->ai_family, raw, text, sizeof(text))) chosen = text;
    }
  }
  if (chosen.empty()) fail_fetch(param, "cannot resolve the image host");
  return chosen;
}

bool in_v4(uint32_t address, uint32_t network, int prefix) {
  const uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
  return (address & mask) == (network & mask);
}

bool is_public_v4(uint32_t a) {
  static const struct {
    uint32_t network;
    int prefix;
  } kBlocked[] = {
      {0x00000000, 8},  {0x0A000000, 8},  {0x64400000, 10}, {0x7F000000, 8},  {0xA9FE0000, 16},
      {0xAC100000, 12}, {0xC0000000, 24}, {0xC0000200, 24}, {0xC0A80000, 16}, {0xC6120000, 15},
      {0xC6336400, 24}, {0xCB007100, 24}, {0xE0000000, 4},  {0xF0000000, 4},
  };
  for (const auto& range : kBlocked) {
    if (in_v4(a, range.network, range.prefix)) return false;
  }
  return true;
}

}  // namespace

bool is_public_address(const sockaddr* address) {
  if (!address) return false;
  if (address->sa_family == AF_INET) {
    return is_public_v4(ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr));
  }
  if (address->sa_family != AF_INET6) return false;
  const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
  const uint8_t* b = a.s6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&a) || IN6_IS_ADDR_V4COMPAT(&a)) {
    const uint32_t v4 =
        (uint32_t{b[12]} << 24) | (uint32_t{b[13]} << 16) | (uint32_t{b[14]} << 8) | b[15];
    return is_public_v4(v4);
  }
  if (IN6_IS_ADDR_UNSPECIFIED(&a) || IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_LINKLOCAL(&a) ||
      IN6_IS_ADDR_SITELOCAL(&a) || IN6_IS_ADDR_MULTICAST(&a)) {
    return false;
  }
  if ((b[0] & 0xfe) == 0xfc) return false;  // fc00::/7 unique local
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return false;  // docs
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) return false;  // NAT64
  if (b[0] == 0x20 && b[1] == 0x02) return false;  // 6to4 can embed any IPv4 address
  return true;
}

std::vector<uint8_t> fetch_remote_image(const std::string& url_text,
                                        const RemoteFetchOptions& options,
                                        const std::string& param) {
  const auto deadline = Clock::now() + options.timeout;
  std::string current = url_text;
  for (int hop = 0; hop <= options.max_redirects; ++hop) {
    const Url url = parse_url(current, param);
    const std::string address = resolve_allowed(url, options, param);
    const auto remaining = deadline - Clock::now();
    if (remaining <= Clock::duration::zero()) fail_fetch(param, "fetching the image timed out");
    const auto remaining_us = std::chrono::duration_cast<std::chrono::microseconds>(remaining);
    const time_t seconds = static_cast<time_t>(remaining_us.count() / 1000000);
    const time_t micros = static_cast<time_t>(remaining_us.count() % 1000000);

    httplib::Client client(
        url.scheme + "://" +
        (url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host) + ":" +
        std::to_string(url.port));
    client.set_hostname_addr_map({{url.host, address}});  // connect only where we checked
    client.set_follow_location(false);
    client.set_decompress(false);
    client.set_keep_alive(false);
    client.set_connection_timeout(seconds, micros);
    client.set_read_timeout(seconds, micros);
    client.set_write_timeout(seconds, micros);

    std::vector<uint8_t> bytes;
    std::string failure;
    std::string location;
    const auto result = client.Get(
        url.target, httplib::Headers{{"Accept", "image/*"}},
        [&](const httplib::Response& response) {
          if (response.status >= 300 && response.status < 400 && response.has_header("Location")) {
            location = response.get_header_value("Location");
            return false;
          }
          if (response.status != 200) {
            failure = "the image server answered HTTP " + std::to_string(response.status);
            return false;
          }
          if (response.has_header("Content-Length")) {
            const std::string length = response.get_header_value("Content-Length");
            if (length.size() > 15 ||
                std::strtoull(length.c_str(), nullptr, 10) > options.max_bytes) {
              failure = "the image is larger than the " + std::to_string(options.max_bytes) +
                        "-byte limit";
              return false;
            }
          }
          return true;
        },
        [&](const char* data, size_t length) {
          if (bytes.size() + length > options.max_bytes) {
            failure =
                "the image is larger than the " + std::to_string(options.max_bytes) + "-byte limit";
            return false;
          }
          if (Clock::now() > deadline) {
            failure = "fetching the image timed out";
            return false;
          }
          bytes.insert(bytes.end(), data, data + length);
          return true;
        });
    if (!location.empty()) {
      if (location.rfind("http://", 0) != 0 && location.rfind("https://", 0) != 0) {
        if (location[0] != '/') fail_fetch(param, "the image server sent an unusable redirect");
        location = url.scheme + "://" +
                   current.substr(current.find("://") + 3)
                       .substr(0, current.substr(current.find("://") + 3).find('/')) +
                   location;
      }
      current = location;
      continue;
    }
    if (!failure.empty()) fail_fetch(param, failure);
    if (!result) {
      fail_fetch(param, "fetching the image failed: " + httplib::to_string(result.error()));
    }
    if (bytes.empty()) fail_fetch(param, "the image server sent an empty body");
    return bytes;
  }
  fail_fetch(param, "the image URL redirects more than " + std::to_string(options.max_redirects) +
                        " times");
}

}  // namespace qvl::server
