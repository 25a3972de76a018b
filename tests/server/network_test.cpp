// Connection watching and remote image fetching, against real loopback sockets.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "server/api_error.h"
#include "server/connection_watch.h"
#include "server/remote_image.h"

namespace qvl::server {
namespace {

sockaddr_storage address_of(const char* text) {
  sockaddr_storage storage{};
  if (std::string(text).find(':') != std::string::npos) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
    v6->sin6_family = AF_INET6;
    EXPECT_EQ(inet_pton(AF_INET6, text, &v6->sin6_addr), 1) << text;
  } else {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
    v4->sin_family = AF_INET;
    EXPECT_EQ(inet_pton(AF_INET, text, &v4->sin_addr), 1) << text;
  }
  return storage;
}

bool is_public(const char* text) {
  const sockaddr_storage storage = address_of(text);
  return is_public_address(reinterpret_cast<const sockaddr*>(&storage));
}

TEST(RemoteImage, AddressPolicy) {
  for (const char* blocked :
       {"127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
        "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fd00::1",
        "::ffff:127.0.0.1", "::ffff:10.0.0.1", "2002:7f00:1::1"}) {
    EXPECT_FALSE(is_public(blocked)) << blocked;
  }
  for (const char* open : {"8.8.8.8", "1.1.1.1", "172.32.0.1", "2606:4700:4700::1111"}) {
    EXPECT_TRUE(is_public(open)) << open;
  }
}

class ImageHost : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/img", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(1000, 'x'), "image/png");
    });
    server_.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(100000, 'x'), "image/png");
    });
    server_.Get("/to-img",
                [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/img"); });
    server_.Get("/to-other", [this](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("http://127.0.0.2:" + std::to_string(port_) + "/img");
    });
    server_.Get("/loop",
                [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/loop"); });
    server_.Get("/missing",
                [](const httplib::Request&, httplib::Response& res) { res.status = 404; });
    port_ = server_.bind_to_any_port("0.0.0.0");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
    // Only 127.0.0.1 counts as allowed here, so 127.0.0.2 plays an internal address.
    options_.address_allowed = [](const sockaddr* address) {
      return address->sa_family == AF_INET &&
             ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr) == 0x7f000001;
    };
    options_.max_bytes = 5000;
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string error_code(const std::string& target) {
    try {
      fetch_remote_image(target, options_, "p");
    } catch (const ApiError& error) {
      EXPECT_EQ(error.status(), 400);
      EXPECT_EQ(error.param(), "p");
      return error.message();
    }
    return "no error";
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  RemoteFetchOptions options_;
};

TEST_F(ImageHost, FetchesAndFollowsAllowedRedirects) {
  EXPECT_EQ(fetch_remote_image(url("/img"), options_, "p").size(), 1000u);
  EXPECT_EQ(fetch_remote_image(url("/to-img"), options_, "p").size(), 1000u);
}

TEST_F(ImageHost, RefusesWhatItShould) {
  EXPECT_NE(error_code(url("/big")).find("larger than"), std::string::npos);
  EXPECT_NE(error_code(url("/to-other")).find("internal address"), std::string::npos);
  EXPECT_NE(error_code(url("/loop")).find("redirects more than"), std::string::npos);
  EXPECT_NE(error_code(url("/missing")).find("HTTP 404"), std::string::npos);
  EXPECT_NE(error_code("http://127.0.0.2:" + std::to_string(port_) + "/img").find("internal"),
            std::string::npos);
  EXPECT_NE(error_code("ftp://127.0.0.1/x").find("http or https"), std::string::npos);
  EXPECT_NE(error_code("http://user:pw@127.0.0.1/x").find("user:password"), std::string::npos);
  // With the real policy, loopback is refused before any connection.
  RemoteFetchOptions strict;
  try {
    fetch_remote_image(url("/img"), strict, "p");
    ADD_FAILURE() << "fetched from loopback";
  } catch (const ApiError& error) {
    EXPECT_NE(error.message().find("internal address"), std::string::npos);
  }
}

TEST_F(ImageHost, TimesOutOnSilentServers) {
  // A listening socket that never answers.
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(0x7f000001);
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(silent, 4), 0);
  socklen_t length = sizeof(address);
  getsockname(silent, reinterpret_cast<sockaddr*>(&address), &length);
  options_.timeout = std::chrono::milliseconds(300);
  const std::string message =
      error_code("http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/img");
  EXPECT_TRUE(message.find("timed out") != std::string::npos ||
              message.find("failed") != std::string::npos)
      << message;
  close(silent);
}

TEST(ConnectionWatch, FindsSocketAndSeesHangUp) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(0x7f000001);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t length = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const int accepted = accept(listener, nullptr, nullptr);
  sockaddr_in client_address{};
  length = sizeof(client_address);
  getsockname(client, reinterpret_cast<sockaddr*>(&client_address), &length);

  EXPECT_EQ(find_connection_socket("127.0.0.1", ntohs(address.sin_port), "127.0.0.1",
                                   ntohs(client_address.sin_port)),
            accepted);
  EXPECT_EQ(find_connection_socket("127.0.0.1", ntohs(address.sin_port), "127.0.0.1", 1), -1);
  EXPECT_FALSE(peer_disconnected(accepted));

  ConnectionWatch watch;
  CancelState state;
  auto registration =
      watch.watch(accepted, ConnectionWatch::Clock::now() + std::chrono::hours(1), &state);
  // Data from the client is not a hang-up.
  ASSERT_EQ(write(client, "x", 1), 1);
  close(client);
  while (!state.cancel.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(state.why(), CancelReason::kClientGone);
  EXPECT_TRUE(peer_disconnected(accepted));
  close(accepted);
  close(listener);
}

TEST(ConnectionWatch, Deadline) {
  ConnectionWatch watch;
  CancelState state;
  auto registration = watch.watch(-1, ConnectionWatch::Clock::now(), &state);
  while (!state.cancel.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(state.why(), CancelReason::kDeadline);
  CancelState other;
  auto second = watch.watch(-1, ConnectionWatch::Clock::now() + std::chrono::hours(1), &other);
  watch.cancel_all(CancelReason::kShutdown);
  EXPECT_EQ(other.why(), CancelReason::kShutdown);
}

}  // namespace
}  // namespace qvl::server
