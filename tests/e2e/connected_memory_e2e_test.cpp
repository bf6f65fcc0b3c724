// SPDX-License-Identifier: MIT
// End to end: `remember: connected` on a real attached limiter. A TCP client with a
// connection to a server behind floodgate, seen before a spoofed flood, comes back through
// the rule's reserve during it: the program found the connection by a socket lookup in the
// namespace of the interface it is attached to. A UDP client seen alike is not remembered.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "e2e/veth_network.h"
#include "udp_traffic/udp_traffic.h"

namespace floodgate::test {
namespace {

constexpr const char* kClient = "198.18.0.3";
constexpr uint16_t kTcpPort = 8080;
constexpr uint16_t kUdpPort = 9999;

// A TCP server in `netns` that takes one connection and counts the bytes it reads.
class SinkServer {
 public:
  explicit SinkServer(const std::string& netns) {
    std::atomic<int> ready{0};
    thread_ = std::thread([this, netns, &ready] {
      int fd = enterNetns(netns) ? socket(AF_INET, SOCK_STREAM, 0) : -1;
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(kTcpPort);
      if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
          listen(fd, 4) != 0) {
        if (fd >= 0) close(fd);
        ready = -1;
        return;
      }
      ready = 1;
      int conn = -1;
      char buf[256];
      while (!stop_) {
        pollfd p{conn < 0 ? fd : conn, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;
        if (conn < 0) {
          conn = accept(fd, nullptr, nullptr);
          continue;
        }
        ssize_t n = read(conn, buf, sizeof(buf));
        if (n <= 0) break;
        bytes_ += static_cast<uint64_t>(n);
      }
      if (conn >= 0) close(conn);
      close(fd);
    });
    while (ready == 0) usleep(1000);
    ok_ = ready == 1;
  }
  ~SinkServer() {
    stop_ = true;
    thread_.join();
  }
  bool ok() const { return ok_; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> bytes_{0};
  bool ok_ = false;
};

// A connection from kClient in `netns` to the server; sends one byte a `gap_ms`.
class TcpClient {
 public:
  explicit TcpClient(const std::string& netns) {
    std::thread([&] {
      if (!enterNetns(netns)) return;
      fd_ = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in local{};
      local.sin_family = AF_INET;
      inet_pton(AF_INET, kClient, &local.sin_addr);
      sockaddr_in remote{};
      remote.sin_family = AF_INET;
      remote.sin_port = htons(kTcpPort);
      inet_pton(AF_INET, VethNetwork::kTargetAddress, &remote.sin_addr);
      if (bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
          connect(fd_, reinterpret_cast<sockaddr*>(&remote), sizeof(remote)) != 0) {
        close(fd_);
        fd_ = -1;
      }
    }).join();
  }
  ~TcpClient() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  // One byte every `gap_ms` for `seconds`; how many were written.
  uint64_t send(double seconds, int gap_ms) {
    uint64_t sent = 0;
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      sent += write(fd_, "x", 1) == 1;
      usleep(static_cast<useconds_t>(gap_ms) * 1000);
    }
    return sent;
  }

 private:
  int fd_ = -1;
};

class ConnectedMemoryE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create({kClient});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
  }

  // Attaches one rule for every protocol that remembers only connected sources: a 4096-slot
  // table and 10k new sources a second, so that the flood below takes a quiet source's slot
  // within two seconds (as in flood_e2e_test.cpp's returning client).
  void attach(const std::string& remember = "connected") {
    const std::string config = "/tmp/fg-connected-" + std::to_string(getpid()) + ".yaml";
    std::ofstream(config) << "defaults: {table_size: 4096}\n"
                          << "rules:\n  - name: per-source\n    limit: {pps: 1000, burst: 100}\n"
                          << "    untracked: {new_sources: 10k, pps: 1000, burst: 100, "
                          << "remember: " << remember << "}\n";
    CommandResult attached =
        net_->floodgate({"attach", net_->targetInterface(), "--config", config});
    std::remove(config.c_str());
    ASSERT_EQ(attached.exit_code, 0) << attached.err;
  }

  // 4M spoofed UDP sources at 1 Mpps, each sending once: the cap refuses throughout.
  void flood() {
    CommandResult r = net_->floodgateInSender(
        {"flood", net_->senderInterface(), "--json", "--dst", VethNetwork::kTargetAddress, "--src",
         "10.0.0.1", "--count", "4000000", "--sources", "4000000", "--rate", "1M"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }

  // Slots the rule gave from its reserve of remembered sources.
  uint64_t returningSlots() {
    CommandResult r = net_->floodgate({"stats", net_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json stats = nlohmann::json::parse(r.out, nullptr, false);
    if (stats.is_discarded()) return 0;
    return stats["rules"][0]["sources"]["returning_sources"].get<uint64_t>();
  }

  // A UDP client seen before the flood, then sending during it: the slots it took from the
  // reserve of remembered sources, under `remember: REMEMBER`.
  uint64_t udpClientReturns(const std::string& remember) {
    attach(remember);
    UdpSendOptions client{
        net_->senderNetns(), kClient, VethNetwork::kTargetAddress, kUdpPort, 2.5, 20, 1, 18};
    client.max_burst = 5;
    auto before = sendUdp(client);
    EXPECT_TRUE(before.ok());
    Result<UdpSendResult> during = Error::failure("not run");
    client.seconds = 1.5;
    std::thread later([&] {
      usleep(2000000);  // the flood has been under way for a while: the slot is gone
      during = sendUdp(client);
    });
    flood();
    later.join();
    EXPECT_TRUE(during.ok());
    EXPECT_GE(during.ok() ? during->sent : 0, 20u);
    const uint64_t returning = returningSlots();
    net_->floodgate({"detach", net_->targetInterface()});
    return returning;
  }

  std::unique_ptr<VethNetwork> net_;
};

TEST_F(ConnectedMemoryE2eTest, AClientWithAConnectionComesBackThroughASpoofedFlood) {
  SinkServer server(net_->targetNetns());
  ASSERT_TRUE(server.ok());
  attach();
  TcpClient client(net_->senderNetns());
  ASSERT_TRUE(client.ok());
  // before the flood: a byte every 50 ms over more than two seconds of the clock
  uint64_t sent = client.send(2.5, 50);
  uint64_t during = 0;
  std::thread later([&] {
    usleep(2000000);  // the flood has been under way for a while: the slot is gone
    during = client.send(1.5, 50);
  });
  flood();
  later.join();
  sent += during;
  for (int i = 0; i < 100 && server.bytes() < sent; ++i) usleep(50000);
  const uint64_t returning = returningSlots();
  std::printf("connected client: %llu of %llu bytes arrived, %llu slots from the reserve\n",
              static_cast<unsigned long long>(server.bytes()),
              static_cast<unsigned long long>(sent), static_cast<unsigned long long>(returning));
  ASSERT_GE(during, 20u);
  EXPECT_EQ(server.bytes(), sent);
  EXPECT_GT(returning, 0u) << "the client was not remembered, or never lost its slot";
  net_->floodgate({"detach", net_->targetInterface()});
}

TEST_F(ConnectedMemoryE2eTest, AUdpClientIsNotRemembered) {
  // the same client under `remember: seen` comes back through the reserve: the flood did
  // take its slot, so what `connected` shows below is the memory's doing
  EXPECT_GT(udpClientReturns("seen"), 0u);
  EXPECT_EQ(udpClientReturns("connected"), 0u) << "a source seen over UDP only was let back in";
}

}  // namespace
}  // namespace floodgate::test
