// SPDX-License-Identifier: MIT
// readRequestHead: complete at the blank line, bad at a request line that is not HTTP/1.x;
// the Host header kept, and which hosts the endpoint answers.
#include "daemon/request_head.h"

#include <gtest/gtest.h>

namespace floodgate::daemon {
namespace {

using State = RequestHead::State;

TEST(RequestHead, CompleteAtTheBlankLineWithThePathWithoutItsQuery) {
  const RequestHead head =
      readRequestHead("GET /metrics?name[]=x HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n");
  EXPECT_EQ(head.state, State::kComplete);
  EXPECT_EQ(head.method, "GET");
  EXPECT_EQ(head.path, "/metrics");
  EXPECT_EQ(readRequestHead("HEAD /healthz HTTP/1.0\n\n").state, State::kComplete);
  EXPECT_EQ(readRequestHead("GET / HTTP/1.1\r\n\r\n").path, "/");
}

TEST(RequestHead, KeepAliveByVersionAndConnectionHeader) {
  EXPECT_TRUE(readRequestHead("GET / HTTP/1.1\r\n\r\n").keep_alive);
  EXPECT_FALSE(readRequestHead("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
  EXPECT_FALSE(readRequestHead("GET / HTTP/1.1\r\nconnection:Close\r\n\r\n").keep_alive);
  EXPECT_FALSE(readRequestHead("GET / HTTP/1.0\r\n\r\n").keep_alive);
  EXPECT_TRUE(readRequestHead("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
  // the head's length, for a request sent right behind it
  EXPECT_EQ(readRequestHead("GET / HTTP/1.1\r\nA: b\r\n\r\nGET /x HTTP/1.1\r\n").length, 24u);
}

TEST(RequestHead, ABodyIsMarkedByItsLengthOrEncoding) {
  EXPECT_FALSE(readRequestHead("GET / HTTP/1.1\r\n\r\n").has_body);
  EXPECT_FALSE(readRequestHead("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n").has_body);
  EXPECT_TRUE(readRequestHead("GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\n").has_body);
  EXPECT_TRUE(readRequestHead("GET / HTTP/1.1\r\ncontent-length: 00\r\n\r\n").has_body);
  EXPECT_TRUE(readRequestHead("GET / HTTP/1.1\r\nTransfer-Encoding: x\r\n\r\n").has_body);
}

TEST(RequestHead, IncompleteUntilTheBlankLine) {
  for (const char* part :
       {"", "GET /met", "GET /metrics HTTP/1.1", "GET /metrics HTTP/1.1\r\n",
        "GET /metrics HTTP/1.1\r\nHost: a\r\n", "GET /metrics HTTP/1.1\r\nHost: a\r\n\r"}) {
    EXPECT_EQ(readRequestHead(part).state, State::kIncomplete) << part;
  }
}

TEST(RequestHead, ARequestLineThatIsNotHttp1IsBad) {
  for (const char* line :
       {"GET\r\n", "GET /metrics\r\n", "GET metrics HTTP/1.1\r\n", "get /metrics HTTP/1.1\r\n",
        "GET /metrics HTTP/2\r\n", "GET  /metrics HTTP/1.1\r\n", "GET /met\x01rics HTTP/1.1\r\n",
        "\x16\x03\x01\x02\x01\xfc\x03\x03\n", "GET /a b HTTP/1.1\n"}) {
    EXPECT_EQ(readRequestHead(line).state, State::kBad) << line;
  }
}

TEST(RequestHead, TheHostHeaderIsKeptAndASecondOneIsBad) {
  EXPECT_FALSE(readRequestHead("GET / HTTP/1.0\r\n\r\n").host.has_value());
  EXPECT_EQ(readRequestHead("GET / HTTP/1.1\r\nhost:  LocalHost:9477 \r\n\r\n").host,
            "localhost:9477");
  EXPECT_EQ(
      readRequestHead("GET / HTTP/1.1\r\nHost: 127.0.0.1:9477\r\nHost: x.example\r\n\r\n").state,
      State::kBad);
}

// What Prometheus, curl and a health check send (the address scraped) is answered; a name
// that a page rebound to 127.0.0.1 (DNS rebinding) is not.
TEST(RequestHead, AHostIsAnAddressOrLocalhostWithAnOptionalPort) {
  for (const char* host :
       {"127.0.0.1", "127.0.0.1:9477", "10.0.0.5:9477", "[::1]", "[::1]:9477", "[2001:db8::5]:80",
        "localhost", "localhost:9477", "LOCALHOST:9477", "127.0.0.1:65535"}) {
    EXPECT_TRUE(isAddressOrLocalhost(host)) << host;
  }
  for (const char* host :
       {"", "rebind.example", "rebind.example:9477", "127.0.0.1.nip.io", "localhost.example",
        "localhost.", "::1", "[::1", "[::1]x", "[::1]:", "[127.0.0.1]",
        "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:9x", "127.0.0.1:0009477", "127.1", "0x7f.0.0.1",
        "127.0.0.1 :9477", ":9477"}) {
    EXPECT_FALSE(isAddressOrLocalhost(host)) << host;
  }
}

}  // namespace
}  // namespace floodgate::daemon
