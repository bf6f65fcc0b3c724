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
  // `position` keys it): 0 or 1; with `proven`, only entries marked proven.
  int rememberedEntries(const std::string& address, size_t position = 0, bool proven = false) {
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
    auto set = sets->lookup(memoryElement(fp));
    EXPECT_TRUE(set.ok());
    int entries = 0;
    for (uint64_t entry : set->memory)
      entries += entry && fg_memory_entry_tag(entry) == fg_memory_tag(fp) &&
                 (!proven || (entry & FG_MEMORY_PROVEN));
    return entries;
  }

  // The fingerprint of IPv4 source `host_order` under the rule at `position`, with the
  // table's seed (which a flooder does not know).
  uint64_t fingerprintOf(uint32_t host_order, size_t position) {
    if (rules_.empty()) {
      auto settings = limiter().settings();
      auto rules = limiter().activeRules();
      EXPECT_TRUE(settings.ok() && rules.ok());
      if (!settings.ok() || !rules.ok()) return 0;
      seed_ = settings->hash_seed;
      rules_ = *rules;
    }
    EXPECT_LT(position, rules_.size());
    const fg_rule& rule = rules_.at(position);
    const uint64_t hash =
        fg_addr_hash(seed_, FG_FAMILY_V4, static_cast<uint64_t>(host_order) << 32, 0);
    return fg_key_fingerprint(hash, rule.id, rule.epoch, FG_FAMILY_V4);
  }

  // The element of `sets` holding the memory entries of fingerprint `fp`.
  uint32_t memoryElement(uint64_t fp) {
    if (!sets_mask_) {
      auto sets = BpfMap<uint32_t, fg_set>::openPinned(mapPinPath(pin_name_, "sets"), "sets");
      EXPECT_TRUE(sets.ok());
      if (!sets.ok()) return 0;
      auto info = mapInfo(sets->fd(), "sets");
      EXPECT_TRUE(info.ok());
      if (!info.ok()) return 0;
      sets_mask_ = info->max_entries - 1;
    }
    return fg_memory_element_of(fp, sets_mask_);
  }

  static std::string dotted(uint32_t host) {
    return std::to_string(host >> 24) + "." + std::to_string((host >> 16) & 255) + "." +
           std::to_string((host >> 8) & 255) + "." + std::to_string(host & 255);
  }

  uint64_t now_ = kStart;
  uint32_t sets_mask_ = 0;
  uint64_t seed_ = 0;
  std::vector<fg_rule> rules_;  // as loaded, for fingerprintOf
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
  EXPECT_EQ(rememberedEntries("127.0.0.2", 0, true), 1) << "remembered, marked proven";
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
  EXPECT_EQ(rememberedEntries("127.0.0.3", 0, true), 0) << "no proof asked, none marked";
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

// A SYN is of no connection yet: it neither proves its source nor keeps the segments of the
// connection that follows in the same second from proving it.
TEST_F(ConnectedSourcesTest, ASynProvesNothingAndTheConnectionsNextSegmentDoes) {
  Connection connection("127.0.0.2", "127.0.0.1");
  loadOnClock({rule()});
  const uint16_t client = connection.clientPort(), server = connection.serverPort();
  later(10);
  ASSERT_EQ(run(segment("127.0.0.2", client, "127.0.0.1", server, 0x02)), XDP_PASS);
  later(10);
  ASSERT_EQ(run(segment("127.0.0.2", client, "127.0.0.1", server, 0x12)), XDP_PASS);
  EXPECT_EQ(rememberedEntries("127.0.0.2"), 0) << "a SYN, a SYN-ACK";
  later(10);
  ASSERT_EQ(run(segment("127.0.0.2", client, "127.0.0.1", server)), XDP_PASS);
  EXPECT_EQ(rememberedEntries("127.0.0.2"), 1) << "the ACK that follows, in the same second";
}

// Rules share the memory's entries: one that remembers every source seen, spoofed ones
// too, cannot fill them against the connected clients of one that remembers only those.
TEST_F(ConnectedSourcesTest, EntriesOfARuleRememberingEverySourceGiveWayToAConnectedClient) {
  Connection connection("127.0.0.2", "127.0.0.1");
  RuleSpec connected = rule();
  connected.name = "connected";
  connected.protocol = Protocol::kTcp;
  RuleSpec seen = rule();
  seen.name = "seen";
  seen.protocol = Protocol::kUdp;
  seen.remember_connected = false;
  loadOnClock({connected, seen});
  // three made-up sources whose entries under the UDP rule are where the client's are
  const uint32_t element = memoryElement(fingerprintOf(0x7f000002, 0));
  std::vector<std::string> spoofed;
  for (uint32_t host = 0x0a000001; host < 0x0a000001 + (64u << 20) && spoofed.size() < 3; ++host)
    if (memoryElement(fingerprintOf(host, 1)) == element) spoofed.push_back(dotted(host));
  ASSERT_EQ(spoofed.size(), 3u);
  for (const std::string& source : spoofed) sendTwice(udpFrom(source));
  for (const std::string& source : spoofed) ASSERT_EQ(rememberedEntries(source, 1), 1) << source;
  sendTwice(segment("127.0.0.2", connection.clientPort(), "127.0.0.1", connection.serverPort()));
  EXPECT_EQ(rememberedEntries("127.0.0.2", 0), 1);
  int left = 0;
  for (const std::string& source : spoofed) left += rememberedEntries(source, 1);
  EXPECT_EQ(left, 2) << "one gave its entry up";
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
