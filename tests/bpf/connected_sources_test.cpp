// SPDX-License-Identifier: MIT
// `remember: connected`: a rule remembers only sources whose packet belongs to a TCP
// connection this host established, found by a socket lookup in the test's own network
// namespace (BPF_PROG_TEST_RUN runs the program on its loopback). Addresses made up and
// sent twice each, which a rule remembering every source seen good takes in, are not.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "bpf/xdp_fixture.h"
#include "fg_gcra.h"
#include "kernel/bpf_map.h"

namespace floodgate::test {
namespace {

constexpr uint64_t kHz = 1000;       // one tick a millisecond
constexpr uint64_t kStart = 100000;  // the start of a second

// A TCP connection over this namespace's loopback: a listener on `server`, a client bound
// to `client` (any port) connected to it, and the accepted end.
class Connection {
 public:
  Connection(const std::string& client, const std::string& server) {
    const bool v6 = server.find(':') != std::string::npos;
    const int family = v6 ? AF_INET6 : AF_INET;
    listener_ = socket(family, SOCK_STREAM, 0);
    client_ = socket(family, SOCK_STREAM, 0);
    sockaddr_storage at{};
    socklen_t len = address(server, 0, at);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&at), len) != 0 || listen(listener_, 4) ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&at), &len) != 0) {
      ADD_FAILURE() << "cannot listen on " << server << ": " << strerror(errno);
      return;
    }
    server_port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&at)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&at)->sin_port);
    sockaddr_storage from{};
    socklen_t from_len = address(client, 0, from);
    if (bind(client_, reinterpret_cast<sockaddr*>(&from), from_len) != 0 ||
        connect(client_, reinterpret_cast<sockaddr*>(&at), len) != 0 ||
        getsockname(client_, reinterpret_cast<sockaddr*>(&from), &from_len) != 0) {
      ADD_FAILURE() << "cannot connect from " << client << ": " << strerror(errno);
      return;
    }
    client_port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&from)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&from)->sin_port);
    accepted_ = accept(listener_, nullptr, nullptr);
    if (accepted_ < 0) ADD_FAILURE() << "cannot accept: " << strerror(errno);
  }
  ~Connection() {
    for (int fd : {accepted_, client_, listener_}) {
      if (fd >= 0) close(fd);
    }
  }
  uint16_t serverPort() const { return server_port_; }
  uint16_t clientPort() const { return client_port_; }

 private:
  static socklen_t address(const std::string& text, uint16_t port, sockaddr_storage& out) {
    if (text.find(':') != std::string::npos) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&out);
      in6->sin6_family = AF_INET6;
      in6->sin6_port = htons(port);
      inet_pton(AF_INET6, text.c_str(), &in6->sin6_addr);
      return sizeof(*in6);
    }
    auto* in = reinterpret_cast<sockaddr_in*>(&out);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    inet_pton(AF_INET, text.c_str(), &in->sin_addr);
    return sizeof(*in);
  }

  int listener_ = -1;
  int client_ = -1;
  int accepted_ = -1;
  uint16_t server_port_ = 0;
  uint16_t client_port_ = 0;
};

class ConnectedSourcesTest : public XdpProgramTest {
 protected:
  // 100 pps with a burst of 5 a source, remembering only connected sources.
  static RuleSpec rule() {
    RuleSpec spec = sourceRule(100, 5);
    spec.remember_connected = true;
    return spec;
  }

  void loadOnClock(std::vector<RuleSpec> rules) {
    AttachOptions options;
    options.test_clock_hz = kHz;
    load(std::move(rules), options);
    setClock(now_);
  }

  void later(uint64_t ms) {
    now_ += ms;
    setClock(now_);
  }

  // A TCP segment with `flags` from `src`:`sport` to `dst`:`dport`, under `vlan` if not 0.
  static std::vector<uint8_t> segment(const std::string& src, uint16_t sport,
                                      const std::string& dst, uint16_t dport, uint8_t flags = 0x10,
                                      uint16_t vlan = 0) {
    PacketBuilder builder;
    builder.eth();
    if (vlan) builder.vlan(vlan);
    if (src.find(':') != std::string::npos) {
      builder.ipv6(src, dst);
    } else {
      builder.ipv4(src, dst);
    }
    return builder.tcp(dport, flags, sport).payload(16).build();
  }

  // The frame sent twice, a second apart, both within the source's limits: what makes a
  // source remembered under `remember: seen`.
  void sendTwice(const std::vector<uint8_t>& frame) {
    later(10);
    ASSERT_EQ(run(frame), XDP_PASS);
    later(1000);
    ASSERT_EQ(run(frame), XDP_PASS);
  }

  // How many memory entries hold the source at `address` (as its slot under the rule at
  // `position` keys it): 0 or 1.
  int rememberedEntries(const std::string& address, size_t position = 0) {
    auto slots = limiter().slots();
    auto rules = limiter().activeRules();
    EXPECT_TRUE(slots.ok() && rules.ok() && position < rules->size());
    if (!slots.ok() || !rules.ok() || position >= rules->size()) return -1;
    uint8_t want[16] = {};
    const bool v6 = address.find(':') != std::string::npos;
    inet_pton(v6 ? AF_INET6 : AF_INET, address.c_str(), want);
    uint64_t fp = 0;
    for (const fg_slot& slot : *slots) {
      if (slot.fingerprint && slot.rule_id == (*rules)[position].id &&
          std::memcmp(slot.addr, want, v6 ? 16 : 4) == 0)
        fp = slot.fingerprint;
    }
    EXPECT_NE(fp, 0u) << address << " holds no slot under the rule at " << position;
    auto sets = BpfMap<uint32_t, fg_set>::openPinned(mapPinPath(pin_name_, "sets"), "sets");
    EXPECT_TRUE(sets.ok()) << sets.error().message;
    if (!sets.ok() || !fp) return -1;
    auto max = mapInfo(sets->fd(), "sets");
    EXPECT_TRUE(max.ok());
    if (!max.ok()) return -1;
    auto set = sets->lookup(fg_memory_element_of(fp, max->max_entries - 1));
    EXPECT_TRUE(set.ok());
    int entries = 0;
    for (uint64_t entry : set->memory) entries += entry && (entry >> 32) == fg_memory_tag(fp);
    return entries;
  }

  uint64_t now_ = kStart;
};

TEST_F(ConnectedSourcesTest, OnlyASourceWithAConnectionIsRemembered) {
  Connection connection("127.0.0.2", "127.0.0.1");
  loadOnClock({rule()});
  const uint16_t port = connection.serverPort();
  // the connected client's segments; the same from an address with no connection (what a
  // spoofer sends), and a SYN to the listener (a handshake not made)
  sendTwice(segment("127.0.0.2", connection.clientPort(), "127.0.0.1", port));
  sendTwice(segment("127.0.0.3", connection.clientPort(), "127.0.0.1", port));
  sendTwice(segment("127.0.0.4", 40004, "127.0.0.1", port, 0x02));
  sendTwice(udpFrom("127.0.0.5"));
  EXPECT_EQ(rememberedEntries("127.0.0.2"), 1);
  EXPECT_EQ(rememberedEntries("127.0.0.3"), 0) << "no connection of its own";
  EXPECT_EQ(rememberedEntries("127.0.0.4"), 0) << "a listener proves nothing";
  EXPECT_EQ(rememberedEntries("127.0.0.5"), 0) << "UDP proves nothing";
}

TEST_F(ConnectedSourcesTest, ARuleThatRemembersEverySourceSeenStillDoes) {
  Connection connection("127.0.0.2", "127.0.0.1");
  RuleSpec seen = rule();
  seen.remember_connected = false;
  loadOnClock({seen});
  sendTwice(segment("127.0.0.3", connection.clientPort(), "127.0.0.1", connection.serverPort()));
  sendTwice(udpFrom("127.0.0.5"));
  EXPECT_EQ(rememberedEntries("127.0.0.3"), 1);
  EXPECT_EQ(rememberedEntries("127.0.0.5"), 1);
}

TEST_F(ConnectedSourcesTest, AConnectionOverIpv6AndUnderAVlanTagProvesItsSource) {
  Connection v6("::1", "::1");
  Connection tagged("127.0.0.6", "127.0.0.1");
  loadOnClock({rule()});
  sendTwice(segment("::1", v6.clientPort(), "::1", v6.serverPort()));
  sendTwice(segment("127.0.0.6", tagged.clientPort(), "127.0.0.1", tagged.serverPort(), 0x10, 7));
  EXPECT_EQ(rememberedEntries("::1"), 1);
  EXPECT_EQ(rememberedEntries("127.0.0.6"), 1);
}

// A source asks for its proof once in a second of the clock at most: one whose slot was
// taken this second is looked up from the next, so slot holders that never connect cost a
// socket lookup a second each, not one a tick.
TEST_F(ConnectedSourcesTest, ASourceAsksForItsProofOnceASecond) {
  Connection connection("127.0.0.2", "127.0.0.1");
  loadOnClock({rule()});
  const auto frame =
      segment("127.0.0.2", connection.clientPort(), "127.0.0.1", connection.serverPort());
  later(10);
  ASSERT_EQ(run(frame), XDP_PASS);
  later(10);
  ASSERT_EQ(run(frame), XDP_PASS);  // a later tick of the same second
  EXPECT_EQ(rememberedEntries("127.0.0.2"), 0);
  later(990);
  ASSERT_EQ(run(frame), XDP_PASS);  // the next second
  EXPECT_EQ(rememberedEntries("127.0.0.2"), 1);
}

// Every rule that matches the packet and remembers connected sources is answered by its one
// proof.
TEST_F(ConnectedSourcesTest, EveryRuleOfThePacketGetsItsMemory) {
  Connection connection("127.0.0.2", "127.0.0.1");
  RuleSpec web = rule();
  web.name = "web";
  web.protocol = Protocol::kTcp;
  web.dst_ports.push_back({connection.serverPort(), connection.serverPort()});
  RuleSpec any = rule();
  any.name = "any";
  any.ipv4_prefix = 24;
  loadOnClock({web, any});
  sendTwice(segment("127.0.0.2", connection.clientPort(), "127.0.0.1", connection.serverPort()));
  EXPECT_EQ(rememberedEntries("127.0.0.2", 0), 1);
  EXPECT_EQ(rememberedEntries("127.0.0.0", 1), 1);
}

}  // namespace
}  // namespace floodgate::test
