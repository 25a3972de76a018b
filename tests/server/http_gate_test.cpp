// The checks made on a request's head before its body is read (http_gate.h), and the choice of
// a stored encoding for the web assets.
#include "server/http_gate.h"

#include <gtest/gtest.h>

#include "server/web_assets.h"

namespace qvl::server {
namespace {

HttpRequest head(HttpHeaders headers, std::string version = "HTTP/1.1") {
  HttpRequest request;
  request.method = "POST";
  request.path = "/v1/chat/completions";
  request.version = std::move(version);
  request.headers = std::move(headers);
  return request;
}

int status_of(const HttpRequest& request, HttpLimits limits = {}) {
  return check_request_head(request, limits).status;
}

TEST(HttpGate, AcceptsPlainRequests) {
  EXPECT_EQ(status_of(head({{"Host", "x"}, {"Content-Length", "12"}})), 0);
  const GateVerdict chunked = check_request_head(head({{"Transfer-Encoding", "Chunked"}}), {});
  EXPECT_EQ(chunked.status, 0);
  EXPECT_TRUE(chunked.chunked);
  EXPECT_EQ(status_of(head({{"Content-Length", "5"}, {"content-length", "5"}})), 0);
  EXPECT_EQ(status_of(head({{"Expect", "100-Continue"}, {"Content-Length", "5"}})), 0);
  EXPECT_EQ(status_of(head({{"Content-Encoding", "identity"}})), 0);
}

TEST(HttpGate, RefusesAmbiguousFraming) {
  EXPECT_EQ(status_of(head({{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}})), 400);
  EXPECT_EQ(status_of(head({{"Content-Length", "5"}, {"Content-Length", "6"}})), 400);
  EXPECT_EQ(status_of(head({{"Content-Length", "+5"}})), 400);
  EXPECT_EQ(status_of(head({{"Content-Length", "-1"}})), 400);
  EXPECT_EQ(status_of(head({{"Content-Length", "5, 5"}})), 400);
  EXPECT_EQ(status_of(head({{"Content-Length", "99999999999999999999"}})), 400);
  EXPECT_EQ(status_of(head({{"Content-Length ", "5"}})), 400);
  EXPECT_EQ(status_of(head({{"X-A", std::string("a\rb")}})), 400);
  EXPECT_EQ(status_of(head({{"Transfer-Encoding", "chunked"}}, "HTTP/1.0")), 400);
}

TEST(HttpGate, RefusesUnknownCodingsAndLargeBodies) {
  EXPECT_EQ(status_of(head({{"Transfer-Encoding", "gzip"}})), 501);
  EXPECT_EQ(status_of(head({{"Transfer-Encoding", "gzip, chunked"}})), 501);
  EXPECT_EQ(status_of(head({{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}})),
            501);
  EXPECT_EQ(status_of(head({{"Content-Encoding", "gzip"}, {"Content-Length", "5"}})), 415);
  EXPECT_EQ(status_of(head({{"Expect", "something"}})), 417);
  HttpLimits limits;
  limits.max_body_bytes = 100;
  EXPECT_EQ(status_of(head({{"Content-Length", "100"}}), limits), 0);
  EXPECT_EQ(status_of(head({{"Content-Length", "101"}}), limits), 413);
}

TEST(HttpGate, BoundsHeaders) {
  HttpHeaders many;
  for (int i = 0; i < 101; ++i) many.emplace_back("X-" + std::to_string(i), "v");
  EXPECT_EQ(status_of(head(many)), 431);
  many.pop_back();
  EXPECT_EQ(status_of(head(many)), 0);
  EXPECT_EQ(status_of(head({{"X-Big", std::string(40 << 10, 'a')}})), 431);
}

TEST(WebAssets, PicksAStoredEncoding) {
  EXPECT_EQ(pick_encoding("gzip, deflate, br", true, true), "br");
  EXPECT_EQ(pick_encoding("gzip, br;q=0.5", true, true), "gzip");
  EXPECT_EQ(pick_encoding("br;q=0, gzip", true, true), "gzip");
  EXPECT_EQ(pick_encoding("gzip", true, true), "gzip");
  EXPECT_EQ(pick_encoding("br", false, true), "");
  EXPECT_EQ(pick_encoding("", true, true), "");
  EXPECT_EQ(pick_encoding("identity", true, true), "");
  EXPECT_EQ(pick_encoding("GZIP", true, true), "gzip");
}

}  // namespace
}  // namespace qvl::server
