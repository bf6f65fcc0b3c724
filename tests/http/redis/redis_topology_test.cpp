// SPDX-License-Identifier: MIT
// A cluster node whose CLUSTER SLOTS answer is nonsense (a range past the 16384 slots, fields
// of other types): the client leaves those ranges out and answers, never looping over them
// while every caller waits. The node is a socket of the test's that answers every request
// with that reply, as no real Redis would.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "floodgate/redis/client.h"

namespace floodgate::http {
namespace {

// [[0, 10^15, [host, port]], [5, "x", [host, port]], [16000, 20000, [host, port]]]
constexpr std::string_view kNonsense =
    "*3\r\n"
    "*3\r\n:0\r\n:1000000000000000\r\n*2\r\n$9\r\n127.0.0.1\r\n:1\r\n"
    "*3\r\n:5\r\n$1\r\nx\r\n*2\r\n$9\r\n127.0.0.1\r\n:1\r\n"
    "*3\r\n:16000\r\n:20000\r\n*2\r\n:7\r\n:1\r\n";

TEST(RedisTopologyTest, ANodeAnsweringNonsenseSlotsIsNoEndlessLoop) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(at);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof(at)), 0);
  ASSERT_EQ(listen(listener, 8), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&at), &size), 0);
  std::atomic<bool> stop{false};
  std::thread node([&] {
    while (!stop) {
      const int c = accept(listener, nullptr, nullptr);
      if (c < 0) return;
      char buffer[4096];
      while (read(c, buffer, sizeof buffer) > 0) {
        if (write(c, kNonsense.data(), kNonsense.size()) < 0) break;
      }
      close(c);
    }
  });
  redis::ClientOptions options;
  options.seeds = {redis::Address{"127.0.0.1", ntohs(at.sin_port)}};
  options.cluster = true;
  options.timeout_ms = 500;
  {
    redis::Client client(options);
    auto replies = client.run({{"k", {"GET", "k"}}});  // a hang fails by ctest's timeout
    ASSERT_TRUE(replies.ok()) << replies.error().message;
    EXPECT_EQ((*replies)[0].elements.size(), 3u) << "the node answered GET as it answers all";
  }
  stop = true;
  shutdown(listener, SHUT_RDWR);
  close(listener);
  node.join();
}

}  // namespace
}  // namespace floodgate::http
