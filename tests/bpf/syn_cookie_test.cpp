// SPDX-License-Identifier: MIT
// SYN cookies at the NIC: a SYN from a source without a slot comes back as a SYN-ACK with a
// cookie the kernel's own check accepts, a forged ACK fails and is counted and limited, and
// a valid one verifies its source (a slot outside the new-source cap).
#include <arpa/inet.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <functional>

#include "bpf/xdp_fixture.h"
#include "controller/rule_compiler.h"
#include "floodgate.skel.h"
#include "syncookie_tc.skel.h"

namespace floodgate::test {
namespace {

constexpr const char* kServerV4 = "198.51.100.1";
constexpr const char* kServerV6 = "2001:db8:ffff::1";
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kAck = 0x10, kRst = 0x04;

uint16_t get16(const std::vector<uint8_t>& f, size_t at) {
  return static_cast<uint16_t>(f[at] << 8 | f[at + 1]);
}
uint32_t get32(const std::vector<uint8_t>& f, size_t at) {
  return static_cast<uint32_t>(get16(f, at)) << 16 | get16(f, at + 2);
}

// The ones' complement sum of `len` bytes from `at`, added to `sum`.
uint32_t sum16(const std::vector<uint8_t>& f, size_t at, size_t len, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < len; i += 2) sum += get16(f, at + i);
  if (len & 1) sum += f[at + len - 1] << 8;
  return sum;
}
uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// A socket listening on the loopback's port in this network namespace, on every address
// (IPv6 sockets take IPv4 too): the program looks the cookie ACK's listener up.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET6, SOCK_STREAM, 0);
    int off = 0;
    setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    socklen_t len = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen: " << strerror(errno);
    }
    port_ = ntohs(addr.sin6_port);
  }
  ~Listener() { close(fd_); }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

class SynCookieTest : public XdpProgramTest {
 protected:
  // A rule giving cookies to SYNs for the listener's port: 10 SYNs a second per source.
  RuleSpec cookieRule(SynCookies mode) const {
    RuleSpec rule = sourceRule(10, 10);
    rule.name = "syn";
    rule.protocol = Protocol::kTcp;
    rule.dst_ports = {{listener_.port(), listener_.port()}};
    rule.tcp_flags_set = kSyn;
    rule.tcp_flags_clear = kAck;
    rule.syn_cookies = mode;
    return rule;
  }

  // A rule over the same SYNs without cookies that bans a source past a burst of two.
  RuleSpec banningRule() const {
    RuleSpec ban = cookieRule(SynCookies::kOff);
    ban.name = "syn_ban";
    ban.limit.burst = 2;
    ban.action = ExceedAction::kBan;
    ban.ban_ns = 600'000'000'000ULL;
    return ban;
  }

  std::vector<uint8_t> segment(const std::string& src, uint8_t flags, uint32_t seq, uint32_t ack,
                               uint16_t mss = 0, uint16_t src_port = 40000) const {
    PacketBuilder builder;
    builder.eth();
    if (src.find(':') != std::string::npos) {
      builder.ipv6(src, kServerV6);
    } else {
      builder.ipv4(src, kServerV4);
    }
    builder.tcp(listener_.port(), flags, src_port).tcpSeq(seq, ack);
    if (mss) builder.tcpMss(mss);
    return builder.build();
  }

  // Runs one frame and keeps what the program made of it.
  int runOut(const std::vector<uint8_t>& frame, std::vector<uint8_t>& out) {
    out.assign(512, 0);
    LIBBPF_OPTS(bpf_test_run_opts, opts);
    opts.data_in = frame.data();
    opts.data_size_in = static_cast<uint32_t>(frame.size());
    opts.data_out = out.data();
    opts.data_size_out = static_cast<uint32_t>(out.size());
    opts.repeat = 1;
    EXPECT_EQ(bpf_prog_test_run_opts(loaded_->programFd(), &opts), 0) << strerror(errno);
    out.resize(opts.data_size_out);
    return static_cast<int>(opts.retval);
  }

  uint64_t stat(uint32_t which) {
    auto rules = limiter().ruleCounters();
    EXPECT_TRUE(rules.ok());
    return rules.ok() && !rules->empty() ? (*rules)[0].table[which] : 0;
  }

  // `frame` with a VLAN tag (`tpid`, `id`) after its MAC addresses.
  static std::vector<uint8_t> withVlanTag(std::vector<uint8_t> frame, uint16_t id,
                                          uint16_t tpid = 0x8100) {
    const uint8_t tag[4] = {static_cast<uint8_t>(tpid >> 8), static_cast<uint8_t>(tpid),
                            static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id)};
    frame.insert(frame.begin() + 12, tag, tag + 4);
    return frame;
  }

  // Checks that `synack` answers `syn` (IPv4 or IPv6, from the frame, behind a priority tag or
  // none) and returns its cookie.
  uint32_t expectSynAck(const std::vector<uint8_t>& syn, const std::vector<uint8_t>& synack,
                        uint16_t expected_mss) {
    const bool tagged = get16(syn, 12) == 0x8100 || get16(syn, 12) == 0x88a8;
    const size_t ip = tagged ? 18 : 14;
    const bool v6 = get16(syn, ip - 2) == 0x86dd;
    const size_t ip_len = v6 ? 40 : 20, tcp = ip + ip_len;
    EXPECT_EQ(synack.size(), tcp + 24);
    if (synack.size() < tcp + 24) return 0;
    // Ethernet addresses swapped; the tag and the EtherType as they came
    EXPECT_TRUE(std::equal(synack.begin(), synack.begin() + 6, syn.begin() + 6));
    EXPECT_TRUE(std::equal(synack.begin() + 6, synack.begin() + 12, syn.begin()));
    EXPECT_TRUE(
        std::equal(synack.begin() + 12, synack.begin() + static_cast<long>(ip), syn.begin() + 12));
    const size_t addr = v6 ? 8 : 12, addr_len = v6 ? 16 : 4;
    EXPECT_TRUE(std::equal(synack.begin() + ip + addr, synack.begin() + ip + addr + addr_len,
                           syn.begin() + ip + addr + addr_len));
    EXPECT_TRUE(std::equal(synack.begin() + ip + addr + addr_len,
                           synack.begin() + ip + addr + 2 * addr_len, syn.begin() + ip + addr));
    uint32_t pseudo = sum16(synack, ip + addr, 2 * addr_len) + 6 + 24;
    if (v6) {
      EXPECT_EQ(get16(synack, ip + 4), 24);  // payload length
      EXPECT_EQ(synack[ip + 6], 6);
    } else {
      EXPECT_EQ(synack[ip], 0x45);
      EXPECT_EQ(get16(synack, ip + 2), 44);
      EXPECT_EQ(synack[ip + 9], 6);
      EXPECT_EQ(fold(sum16(synack, ip, 20)), 0xffff) << "IPv4 header checksum";
    }
    EXPECT_EQ(fold(sum16(synack, tcp, 24, pseudo)), 0xffff) << "TCP checksum";
    EXPECT_EQ(get16(synack, tcp), get16(syn, tcp + 2));  // ports swapped
    EXPECT_EQ(get16(synack, tcp + 2), get16(syn, tcp));
    EXPECT_EQ(get32(synack, tcp + 8), get32(syn, tcp + 4) + 1);  // ACK = seq + 1
    EXPECT_EQ(synack[tcp + 12] >> 4, 6);
    EXPECT_EQ(synack[tcp + 13], kSyn | kAck);
    EXPECT_EQ(synack[tcp + 20], 2);  // the MSS option
    EXPECT_EQ(synack[tcp + 21], 4);
    EXPECT_EQ(get16(synack, tcp + 22), expected_mss);
    return get32(synack, tcp + 4);
  }

  // A SYN from `src` answered with a cookie, whose ACK then verifies `src`.
  void handshake(const std::string& src, uint16_t mss, uint16_t expected_mss) {
    std::vector<uint8_t> syn = segment(src, kSyn, 1000, 0, mss), synack;
    ASSERT_EQ(runOut(syn, synack), XDP_TX);
    uint32_t cookie = expectSynAck(syn, synack, expected_mss);
    EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 1u);

    std::vector<uint8_t> out;
    EXPECT_EQ(runOut(segment(src, kAck, 1001, cookie + 1), out), XDP_PASS);
    EXPECT_EQ(stat(FG_TABLE_COOKIE_VERIFIED), 1u);
    EXPECT_EQ(stat(FG_TABLE_COOKIE_FAILED), 0u);
    EXPECT_EQ(stat(FG_TABLE_VERIFIED_SLOT), 1u) << "the verified source takes a slot";
    EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 0u) << "outside the new-source cap";

    // verified: its next SYN meets its own bucket, not a cookie
    EXPECT_EQ(runOut(segment(src, kSyn, 5000, 0, mss), out), XDP_PASS);
    EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 1u);
  }

  // With a verified cap of one, after one verified source: `forged` ACKs with made-up
  // cookies from spoofed sources, then 30 handshakes of another source, each with its own
  // port. Returns how many of their ACKs passed, and counts the drops.
  int handshakesPastTheVerifiedCap(ExceedAction action, int* dropped, uint32_t forged = 0) {
    RuleSpec rule = cookieRule(SynCookies::kAlways);
    rule.verified_sources_per_s = 1;  // a burst of one verified source
    rule.action = action;
    if (action == ExceedAction::kBan) rule.ban_ns = 600'000'000'000ULL;
    AttachOptions options;
    options.test_clock_hz = 250;
    load({rule}, options);
    setClock(100000);
    handshake("192.0.2.60", 1460, 1460);
    std::vector<uint8_t> synack, out;
    for (uint32_t i = 0; i < forged; ++i) {
      runOut(
          segment("198.51.100." + std::to_string(i % 250), kAck, 7000 + i, 0x12345678 + i * 7919),
          out);
    }
    int passed = 0;
    *dropped = 0;
    for (uint16_t i = 0; i < 30; ++i) {
      std::vector<uint8_t> syn = segment("192.0.2.61", kSyn, 1000 + i, 0, 1460, 41000 + i);
      EXPECT_EQ(runOut(syn, synack), XDP_TX);
      uint32_t cookie = get32(synack, 14 + 20 + 4);
      int verdict = runOut(segment("192.0.2.61", kAck, 1001 + i, cookie + 1, 0, 41000 + i), out);
      passed += verdict == XDP_PASS;
      *dropped += verdict == XDP_DROP;
    }
    return passed;
  }

  uint64_t ruleVerdict(uint32_t verdict) {
    auto rules = limiter().ruleCounters();
    EXPECT_TRUE(rules.ok());
    return rules.ok() && !rules->empty() ? (*rules)[0].by_verdict[verdict].packets : 0;
  }

  // Counter `which` of the rule at `rule` in the list.
  uint64_t tableOf(size_t rule, uint32_t which) {
    auto rules = limiter().ruleCounters();
    EXPECT_TRUE(rules.ok() && rules->size() > rule);
    return rules.ok() && rules->size() > rule ? (*rules)[rule].table[which] : 0;
  }

  // A cookie rule in auto mode with a new-source cap of one a second (a burst of one), on a
  // test clock at 100000.
  void loadAutoWithACapOfOne() {
    RuleSpec rule = cookieRule(SynCookies::kAuto);
    rule.new_sources_per_s = 1;
    AttachOptions options;
    options.test_clock_hz = 250;
    load({rule}, options);
    setClock(100000);
  }

  // `frame` with four NOPs of options in its IPv4 header, which starts at `ip`.
  static std::vector<uint8_t> withIpv4Options(std::vector<uint8_t> frame, size_t ip) {
    frame.insert(frame.begin() + static_cast<long>(ip) + 20, 4, 0x01);
    frame[ip] = 0x46;
    frame[ip + 3] = static_cast<uint8_t>(frame[ip + 3] + 4);
    return frame;
  }

  // Runs `count` SYNs, the i-th `frame(i)`, none of which may get a cookie: how many passed
  // and how many were dropped.
  std::pair<int, int> synsWithoutCookies(int count,
                                         const std::function<std::vector<uint8_t>(int)>& frame) {
    std::vector<uint8_t> out;
    int passed = 0, dropped = 0;
    for (int i = 0; i < count; ++i) {
      const int verdict = runOut(frame(i), out);
      EXPECT_NE(verdict, XDP_TX) << "SYN " << i;
      passed += verdict == XDP_PASS;
      dropped += verdict == XDP_DROP;
    }
    return {passed, dropped};
  }

  // With the cookie rule first and the banning rule second: exactly `slots` slots taken in
  // each, no cookie sent and no ban started, of either family.
  void expectNoMoreSlotsNorBans(uint64_t slots) {
    EXPECT_EQ(tableOf(0, FG_TABLE_NEW_SOURCE), slots) << "slots in the cookie rule";
    EXPECT_EQ(tableOf(1, FG_TABLE_NEW_SOURCE), slots) << "slots in the banning rule";
    EXPECT_EQ(tableOf(0, FG_TABLE_COOKIE_SENT), 0u);
    auto settings = limiter().settings();
    EXPECT_TRUE(settings.ok()) << settings.error().message;
    if (!settings.ok()) return;
    EXPECT_EQ(settings->ban_entries[0], 0u);
    EXPECT_EQ(settings->ban_entries[1], 0u);
  }

  Listener listener_;
};

TEST_F(SynCookieTest, Ipv4SynGetsACookieAndItsAckVerifiesTheSource) {
  load({cookieRule(SynCookies::kAlways)});
  handshake("192.0.2.10", 1460, 1460);
  // its ACK and its next SYN, which meets its bucket; the SYN answered is counted sent only
  EXPECT_EQ(ruleVerdict(FG_VERDICT_PASS), 2u);
  EXPECT_EQ(ruleVerdict(FG_VERDICT_DROP), 0u);
}

TEST_F(SynCookieTest, Ipv6SynGetsACookieAndItsAckVerifiesTheSource) {
  load({cookieRule(SynCookies::kAlways)});
  handshake("2001:db8:1::10", 1440, 1440);
}

TEST_F(SynCookieTest, SynWithoutMssGetsTheSmallestCookieMss) {
  load({cookieRule(SynCookies::kAlways)});
  handshake("192.0.2.12", 0, 536);
}

// A client opens connections at once: every SYN meets a cookie, and the later ACKs come after
// the first took the source a slot. They must reach the TC handover marked, or the kernel,
// whose SYN queue never filled, answers them with resets; and each is charged as the SYN it
// completes, or one source could open any number of connections past its limit.
TEST_F(SynCookieTest, ConnectionsOpenedAtOnceAreMarkedAndChargedAsTheirSyns) {
  RuleSpec rule = cookieRule(SynCookies::kAlways);
  rule.limit.burst = 1;  // one SYN at once, a tenth of a second apart
  AttachOptions options;
  options.test_clock_hz = 250;
  load({rule}, options);
  setClock(100000);  // still: nothing refills
  std::vector<uint8_t> synacks[3], outs[3];
  std::vector<uint8_t> acks[3];
  for (uint16_t i = 0; i < 3; ++i) {
    const uint32_t seq = 1000 + 2000 * i;
    ASSERT_EQ(runOut(segment("192.0.2.70", kSyn, seq, 0, 1460, 42000 + i), synacks[i]), XDP_TX);
    acks[i] =
        segment("192.0.2.70", kAck, seq + 1, get32(synacks[i], 14 + 20 + 4) + 1, 0, 42000 + i);
  }
  ASSERT_EQ(runOut(acks[0], outs[0]), XDP_PASS);
  ASSERT_EQ(stat(FG_TABLE_VERIFIED_SLOT), 1u) << "the first ACK takes the source a slot";
  ASSERT_EQ(runOut(acks[1], outs[1]), XDP_PASS) << "its SYN fits the burst of one";
  EXPECT_EQ(runOut(acks[2], outs[2]), XDP_DROP) << "the burst is spent: no third connection";
  EXPECT_EQ(stat(FG_TABLE_COOKIE_VERIFIED), 3u);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(outs[i].size(), acks[i].size() + sizeof(fg_cookie_meta)) << "metadata, " << i;
    fg_cookie_meta meta{};
    std::memcpy(&meta, outs[i].data(), sizeof(meta));
    EXPECT_EQ(meta.magic, FG_COOKIE_META_MAGIC);
    EXPECT_EQ(meta.mss, 1460);
  }
  // an ACK of the source's connection, whose number is no cookie, is not marked nor charged
  std::vector<uint8_t> out;
  const uint32_t not_a_cookie = get32(synacks[0], 14 + 20 + 4) + 400;
  ASSERT_EQ(runOut(segment("192.0.2.70", kAck, 1500, not_a_cookie, 0, 42000), out), XDP_PASS);
  EXPECT_EQ(out.size(), acks[0].size());
  EXPECT_EQ(stat(FG_TABLE_COOKIE_VERIFIED), 3u);
}

// The cookie rule admits a SYN or a cookie ACK of a source without a slot; every other rule
// the packet meets still decides it, or a global SYN cap (or any rule next to the cookie
// rule) would never see the SYNs a flood of new sources sends, nor the SYN-ACKs they draw.
TEST_F(SynCookieTest, OtherRulesDecideCookieAnsweredSynsAndTheirAcks) {
  RuleSpec syn_cap = cookieRule(SynCookies::kOff);
  syn_cap.name = "syn_cap";
  syn_cap.key = KeyKind::kGlobal;
  syn_cap.limit.burst = 3;
  RuleSpec ack_cap = syn_cap;
  ack_cap.name = "ack_cap";
  ack_cap.tcp_flags_set = kAck;
  ack_cap.tcp_flags_clear = kSyn;
  ack_cap.limit.burst = 1;
  AttachOptions options;
  options.test_clock_hz = 250;
  load({cookieRule(SynCookies::kAlways), syn_cap, ack_cap}, options);
  setClock(100000);  // still: nothing refills
  std::vector<uint8_t> synack, out;
  std::vector<std::vector<uint8_t>> acks;
  for (int i = 0; i < 6; ++i) {
    const std::string src = "192.0.2." + std::to_string(80 + i);
    const int verdict = runOut(segment(src, kSyn, 1000, 0, 1460), synack);
    if (i < 3) {
      ASSERT_EQ(verdict, XDP_TX) << "SYN " << i << " fits the global cap";
      acks.push_back(segment(src, kAck, 1001, get32(synack, 14 + 20 + 4) + 1));
    } else {
      EXPECT_EQ(verdict, XDP_DROP) << "SYN " << i << " is over the global cap: no SYN-ACK";
    }
  }
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 3u) << "only the SYN-ACKs that went out";
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 0u) << "the walk leaves the cookie rule out";
  auto rules = limiter().ruleCounters();
  ASSERT_TRUE(rules.ok() && rules->size() == 3);
  EXPECT_EQ((*rules)[1].by_verdict[FG_VERDICT_PASS].packets, 3u);
  EXPECT_EQ((*rules)[1].by_verdict[FG_VERDICT_DROP].packets, 3u);

  EXPECT_EQ(runOut(acks[0], out), XDP_PASS);
  EXPECT_EQ(out.size(), acks[0].size() + sizeof(fg_cookie_meta)) << "marked for the listener";
  EXPECT_EQ(runOut(acks[1], out), XDP_DROP) << "the ACK cap's burst is spent";
  EXPECT_EQ(stat(FG_TABLE_COOKIE_VERIFIED), 2u);
  rules = limiter().ruleCounters();
  ASSERT_TRUE(rules.ok() && rules->size() == 3);
  EXPECT_EQ((*rules)[2].by_verdict[FG_VERDICT_PASS].packets, 1u);
  EXPECT_EQ((*rules)[2].by_verdict[FG_VERDICT_DROP].packets, 1u);
}

// A source that never answers its SYN-ACKs may be anyone's address: the other rules keyed by
// source keep no slot and start no ban for its SYNs (a spoofed flood would fill their tables
// and use up their new-source caps, which real clients need, or ban the address it forges).
// Once the source is verified, they limit and ban it as any source.
TEST_F(SynCookieTest, OtherSourceRulesTrackAndBanOnlyVerifiedSources) {
  AttachOptions options;
  options.test_clock_hz = 250;
  load({banningRule(), cookieRule(SynCookies::kAlways)}, options);
  setClock(100000);
  std::vector<uint8_t> synack, out;
  for (uint16_t i = 0; i < 10; ++i) {
    EXPECT_EQ(runOut(segment("192.0.2.90", kSyn, 1000 + i, 0, 1460, 43000 + i), synack), XDP_TX)
        << "SYN " << i;
  }
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 0u) << "no slot in the other rule";
  auto settings = limiter().settings();
  ASSERT_TRUE(settings.ok()) << settings.error().message;
  EXPECT_EQ(settings->ban_entries[0], 0u);

  // verified: its SYNs meet every rule
  ASSERT_EQ(
      runOut(segment("192.0.2.90", kAck, 1010, get32(synack, 14 + 20 + 4) + 1, 0, 43009), out),
      XDP_PASS);
  EXPECT_EQ(runOut(segment("192.0.2.90", kSyn, 5000, 0, 1460, 44000), out), XDP_PASS);
  EXPECT_EQ(runOut(segment("192.0.2.90", kSyn, 5000, 0, 1460, 44001), out), XDP_PASS);
  EXPECT_EQ(runOut(segment("192.0.2.90", kSyn, 5000, 0, 1460, 44002), out), XDP_DROP);
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 1u);
  settings = limiter().settings();
  ASSERT_TRUE(settings.ok()) << settings.error().message;
  EXPECT_EQ(settings->ban_entries[0], 1u) << "over the ban rule's burst";
}

// Most clients set don't-fragment on their SYNs (path MTU discovery): such a SYN is whole,
// not a fragment, and gets its cookie; its ACK, with the flag too, verifies it.
TEST_F(SynCookieTest, ASynWithDontFragmentSetGetsACookie) {
  load({cookieRule(SynCookies::kAlways)});
  auto dontFragment = [&](uint8_t flags, uint32_t seq, uint32_t ack) {
    PacketBuilder builder;
    builder.eth().ipv4("192.0.2.75", kServerV4).ipv4DontFragment();
    builder.tcp(listener_.port(), flags).tcpSeq(seq, ack);
    if (flags == kSyn) builder.tcpMss(1460);
    return builder.build();
  };
  std::vector<uint8_t> syn = dontFragment(kSyn, 1000, 0), synack, out;
  ASSERT_EQ(syn[14 + 6], 0x40);
  ASSERT_EQ(runOut(syn, synack), XDP_TX);
  const uint32_t cookie = expectSynAck(syn, synack, 1460);
  EXPECT_EQ(runOut(dontFragment(kAck, 1001, cookie + 1), out), XDP_PASS);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_VERIFIED), 1u);
}

// A SYN behind a priority tag (VLAN ID 0, which the stack takes as the interface's own frame)
// gets its cookie back behind the same tag, and the tagged ACK returning it verifies its
// source. A spoofed flood in such frames is answered too: it takes no slot and starts no ban
// in the rule beside (one source sends past the banning rule's burst).
TEST_F(SynCookieTest, ASynBehindAPriorityTagGetsItsCookieBehindTheSameTag) {
  load({cookieRule(SynCookies::kAlways), banningRule()});
  std::vector<uint8_t> synack, out;
  uint64_t verified = 0;
  constexpr uint16_t kPriority5 = 5 << 13;  // VLAN ID 0
  for (const auto& [src, tpid] :
       {std::pair<std::string, uint16_t>{"192.0.2.70", 0x8100}, {"2001:db8:70::1", 0x88a8}}) {
    SCOPED_TRACE(src);
    std::vector<uint8_t> syn = withVlanTag(segment(src, kSyn, 1000, 0, 1460), kPriority5, tpid);
    ASSERT_EQ(runOut(syn, synack), XDP_TX);
    const uint32_t cookie =
        expectSynAck(syn, synack, src.find(':') != std::string::npos ? 1440 : 1460);
    EXPECT_EQ(runOut(withVlanTag(segment(src, kAck, 1001, cookie + 1), kPriority5, tpid), out),
              XDP_PASS);
    EXPECT_EQ(tableOf(0, FG_TABLE_COOKIE_VERIFIED), ++verified);
    EXPECT_EQ(tableOf(0, FG_TABLE_VERIFIED_SLOT), verified) << "the verified source's slot";
  }
  for (int i = 0; i < 30; ++i) {
    std::vector<uint8_t> syn = withVlanTag(
        segment("192.0.2.71", kSyn, 1000, 0, 1460, static_cast<uint16_t>(42000 + i)), kPriority5);
    ASSERT_EQ(runOut(syn, synack), XDP_TX) << "SYN " << i;
  }
  EXPECT_EQ(tableOf(0, FG_TABLE_COOKIE_SENT), 32u);
  EXPECT_EQ(tableOf(0, FG_TABLE_NEW_SOURCE), 0u) << "slots in the cookie rule";
  EXPECT_EQ(tableOf(1, FG_TABLE_NEW_SOURCE), 0u) << "slots in the banning rule";
  auto settings = limiter().settings();
  ASSERT_TRUE(settings.ok()) << settings.error().message;
  EXPECT_EQ(settings->ban_entries[1], 0u);
}

// What the stack takes as the interface's own frame is what gets a cookie: a tag whose VLAN
// ID is 0, whatever its priority and drop-eligible bits. A VLAN ID in any of the twelve bits,
// or a second tag behind a priority tag (the handover would meet a VLAN frame), gets none.
TEST_F(SynCookieTest, OnlyAPriorityTagAloneIsAnsweredWhateverItsOtherBits) {
  load({cookieRule(SynCookies::kAlways)});
  // the tags' control words as given, the outer first; a source of its own each, as one
  // that takes a slot (the route of a SYN behind a VLAN ID) gets no cookie after
  auto syn = [&](std::initializer_list<uint16_t> tags, int source) {
    std::vector<uint8_t> frame = segment("192.0.2." + std::to_string(source), kSyn, 1000, 0, 1460);
    for (auto tci = std::rbegin(tags); tci != std::rend(tags); ++tci)
      frame = withVlanTag(frame, *tci);
    return frame;
  };
  std::vector<uint8_t> out;
  EXPECT_EQ(runOut(syn({0x0100}, 101), out), XDP_PASS) << "VLAN 256";
  EXPECT_EQ(runOut(syn({0x0800}, 102), out), XDP_PASS) << "VLAN 2048";
  EXPECT_EQ(runOut(syn({0x0001}, 103), out), XDP_PASS) << "VLAN 1";
  EXPECT_EQ(runOut(syn({0x0000, 0x0000}, 104), out), XDP_PASS) << "two priority tags";
  EXPECT_EQ(runOut(syn({0x0000, 0x0007}, 105), out), XDP_PASS) << "VLAN 7 inside";
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 5u) << "each took a slot, as without cookies";
  EXPECT_EQ(runOut(syn({0xf000}, 106), out), XDP_TX) << "priority 7, drop eligible";
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 1u);
}

// SYNs behind a VLAN ID left in the frame (a trunk without VLAN offload), or two tags, which
// no cookie answers: the program cannot tell whether a device of this namespace serves that
// VLAN, and behind two tags the listener's handover would meet a VLAN frame. While the
// new-source cap has room, one meets the rules as any SYN: a real client behind such frames
// takes its slot. Refused by the cap, spoofed ones and a new source's take no slot and start
// no ban in any rule keyed by source (the new source sends past the banning rule's burst):
// the cookie rule's untracked bucket bounds them, as it does made-up cookies, while the
// client with a slot keeps its own bucket. A second on, the cap has room again.
TEST_F(SynCookieTest, SynsBehindAVlanIdOrTwoTagsTakeNoSlotAndStartNoBanWhileTheCapRefuses) {
  RuleSpec cookies = cookieRule(SynCookies::kAlways);
  cookies.new_sources_per_s = 1;  // a burst of one new source
  AttachOptions options;
  options.test_clock_hz = 250;
  load({cookies, banningRule()}, options);
  setClock(100000);
  // one tag with VLAN ID 7, or a priority tag (0) inside an outer tag of VLAN 100
  auto tagged = [&](int tags, const std::string& src) {
    PacketBuilder builder;
    builder.eth();
    if (tags == 2) builder.vlan(100, 0x88a8);
    builder.vlan(tags == 2 ? 0 : 7).ipv4(src, kServerV4);
    return builder.tcp(listener_.port(), kSyn).tcpSeq(1000, 0).tcpMss(1460).build();
  };
  std::vector<uint8_t> out;
  // room under the cap: the client's SYN takes a slot in both rules, as without cookies
  EXPECT_EQ(runOut(tagged(1, "192.0.2.80"), out), XDP_PASS);
  EXPECT_EQ(tableOf(0, FG_TABLE_NEW_SOURCE), 1u);
  EXPECT_EQ(tableOf(1, FG_TABLE_NEW_SOURCE), 1u);
  // the next new source finds the cap spent: refused, and no slot in the other rule either
  runOut(tagged(2, "192.0.2.81"), out);
  ASSERT_EQ(tableOf(0, FG_TABLE_CAPPED), 1u);
  EXPECT_EQ(tableOf(1, FG_TABLE_NEW_SOURCE), 1u);

  auto [passed, dropped] = synsWithoutCookies(30, [&](int i) {
    return tagged(1 + i % 2, i % 2 ? "192.0.2.90" : "192.0.2." + std::to_string(100 + i));
  });
  // the untracked bucket's burst of 10, less the refused one's, on a clock that stands still
  EXPECT_EQ(passed, 9);
  EXPECT_EQ(dropped, 21);
  EXPECT_EQ(tableOf(0, FG_TABLE_UNTRACKED_PASS), 10u);
  EXPECT_EQ(tableOf(0, FG_TABLE_CAPPED), 31u);
  expectNoMoreSlotsNorBans(1);
  // the client with a slot: its own bucket, whatever the flood did to the untracked one
  EXPECT_EQ(runOut(tagged(2, "192.0.2.80"), out), XDP_PASS);
  // a second on, the cap has room for one more client
  setClock(100000 + 250);
  EXPECT_EQ(runOut(tagged(1, "192.0.2.82"), out), XDP_PASS);
  EXPECT_EQ(tableOf(0, FG_TABLE_NEW_SOURCE), 2u);
}

// SYNs wrapped in what their sender chooses (IPv4 options, AH, IPv6 extension headers, a
// first fragment; in a tagged frame too), and SYNs with a FIN or RST, get no cookie and never take
// a slot, even while the new-source cap has room: they are charged to the cookie rule's untracked
// bucket, and what it admits meets only the global rules, so a spoofed flood sent so takes no slot
// and starts no ban (the new source sends past the banning rule's burst). A plain SYN of the same
// source then still gets its cookie.
TEST_F(SynCookieTest, SynsInHeadersTheirSenderChoosesNeverTakeASlot) {
  RuleSpec global = cookieRule(SynCookies::kOff);
  global.name = "syn_global";
  global.key = KeyKind::kGlobal;
  global.limit.burst = 1000;
  AttachOptions options;
  options.test_clock_hz = 250;
  load({cookieRule(SynCookies::kAlways), banningRule(), global}, options);
  setClock(100000);
  auto wrapped = [&](int kind, const std::string& src) {
    const bool v6 = src.find(':') != std::string::npos;
    PacketBuilder builder;
    builder.eth();
    if (kind == 5) builder.vlan(7);
    if (v6) {
      builder.ipv6(src, kServerV6);
    } else {
      builder.ipv4(src, kServerV4);
    }
    if (kind == 1) builder.ipv6Ext(51, 16);  // AH
    if (kind == 2) builder.ipv6Ext(0, 8);    // hop-by-hop options
    if (kind == 3 && v6) builder.ipv6Fragment(0, true);
    const uint8_t flags = kind == 6 ? kSyn | kFin : kind == 7 ? kSyn | kRst : kSyn;
    builder.tcp(listener_.port(), flags).tcpSeq(1000, 0).tcpMss(1460);
    if (kind == 3 && !v6) builder.ipv4Fragment(0, true);
    std::vector<uint8_t> frame = builder.build();
    if ((kind == 0 || kind == 5) && !v6) return withIpv4Options(frame, kind == 5 ? 18 : 14);
    return frame;
  };
  const std::vector<std::pair<int, std::string>> kinds = {
      {0, "192.0.2.1"},   {1, "192.0.2.1"},   {3, "192.0.2.1"},
      {5, "192.0.2.1"},   {1, "2001:db8::1"}, {2, "2001:db8::1"},
      {3, "2001:db8::1"}, {6, "192.0.2.1"},   {7, "2001:db8::1"}};
  std::vector<uint8_t> out;
  auto [passed, dropped] = synsWithoutCookies(36, [&](int i) {
    const auto& [kind, prefix] = kinds[static_cast<size_t>(i) % kinds.size()];
    // every other SYN from one source, the rest each from a new one
    return wrapped(kind,
                   prefix.substr(0, prefix.size() - 1) + std::to_string(i % 2 ? 90 : 100 + i));
  });
  // the untracked bucket's burst of 10 on a clock that stands still; the cap had room all along
  EXPECT_EQ(passed, 10);
  EXPECT_EQ(dropped, 26);
  EXPECT_EQ(tableOf(0, FG_TABLE_UNTRACKED_PASS), 10u);
  EXPECT_EQ(tableOf(0, FG_TABLE_UNTRACKED_DROP), 26u);
  EXPECT_EQ(tableOf(0, FG_TABLE_CAPPED), 0u);
  expectNoMoreSlotsNorBans(0);
  auto rules = limiter().ruleCounters();
  ASSERT_TRUE(rules.ok() && rules->size() == 3);
  EXPECT_EQ((*rules)[2].by_verdict[FG_VERDICT_PASS].packets, 10u)
      << "the global rule decides what the untracked bucket admits";
  // the source that sent past the banning rule's burst is still unknown: a plain SYN gets
  // its cookie
  EXPECT_EQ(runOut(segment("192.0.2.90", kSyn, 1000, 0, 1460), out), XDP_TX);
  EXPECT_EQ(runOut(segment("2001:db8::90", kSyn, 1000, 0, 1460), out), XDP_TX);
  // and an ECN setup SYN (ECE and CWR beside it) is a plain SYN
  EXPECT_EQ(runOut(segment("192.0.2.91", kSyn | 0x40 | 0x80, 1000, 0, 1460), out), XDP_TX);
}

// A cookie rule that clears FIN still holds SYNs with a FIN beside it (no listener takes
// them): a spoofed flood of them takes no slot and starts no ban in a rule beside it that
// does not clear FIN, as any SYN no cookie answers.
TEST_F(SynCookieTest, ACookieRuleThatClearsFinStillHoldsSynsWithAFin) {
  RuleSpec cookies = cookieRule(SynCookies::kAlways);
  cookies.tcp_flags_clear = kAck | kFin;
  load({cookies, banningRule()});
  auto [passed, dropped] = synsWithoutCookies(20, [&](int i) {
    return segment(i % 2 ? "192.0.2.90" : "192.0.2." + std::to_string(100 + i), kSyn | kFin, 1, 0,
                   1460);
  });
  EXPECT_EQ(passed + dropped, 20);
  EXPECT_EQ(tableOf(0, FG_TABLE_UNTRACKED_PASS) + tableOf(0, FG_TABLE_UNTRACKED_DROP), 20u);
  expectNoMoreSlotsNorBans(0);
  std::vector<uint8_t> out;
  EXPECT_EQ(runOut(segment("192.0.2.30", kSyn, 1, 0, 1460), out), XDP_TX);
}

TEST_F(SynCookieTest, ForgedAcksFailAreCountedAndLimitedByTheUntrackedBucket) {
  AttachOptions options;
  options.test_clock_hz = 250;
  load({cookieRule(SynCookies::kAlways)}, options);
  setClock(100000);
  std::vector<uint8_t> out;
  int passed = 0, dropped = 0;
  // a flood of made-up cookies from spoofed sources: the untracked bucket (as one source,
  // burst 10) lets a burst through to the listener, which resets them, and drops the rest
  for (uint32_t i = 0; i < 40; ++i) {
    std::string src = "192.0.2." + std::to_string(100 + i);
    int verdict = runOut(segment(src, kAck, 7000 + i, 0x12345678 + i * 7919), out);
    passed += verdict == XDP_PASS;
    dropped += verdict == XDP_DROP;
  }
  EXPECT_EQ(stat(FG_TABLE_COOKIE_FAILED), 40u);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_VERIFIED), 0u);
  EXPECT_EQ(stat(FG_TABLE_VERIFIED_SLOT), 0u);
  EXPECT_EQ(passed + dropped, 40);
  EXPECT_EQ(passed, 10) << "the untracked bucket's burst, on a clock that stands still";
  // the cookie rule's own counters hold what it decided, passes as well as drops
  EXPECT_EQ(ruleVerdict(FG_VERDICT_PASS), 10u);
  EXPECT_EQ(ruleVerdict(FG_VERDICT_DROP), 30u);
}

// A cookie rule without flags meets ACKs too: a forged ACK its untracked bucket admitted is
// not charged again by it in the walk (as a new source, it would take a slot there).
TEST_F(SynCookieTest, AForgedAckIsChargedOnceUnderACookieRuleWithoutFlags) {
  RuleSpec rule = cookieRule(SynCookies::kAlways);
  rule.tcp_flags_set = 0;
  rule.tcp_flags_clear = 0;
  AttachOptions options;
  options.test_clock_hz = 250;
  load({rule}, options);
  setClock(100000);
  std::vector<uint8_t> out;
  int passed = 0;
  for (uint32_t i = 0; i < 40; ++i) {
    std::string src = "192.0.2." + std::to_string(100 + i);
    passed += runOut(segment(src, kAck, 7000 + i, 0x12345678 + i * 7919), out) == XDP_PASS;
  }
  EXPECT_EQ(stat(FG_TABLE_COOKIE_FAILED), 40u);
  EXPECT_EQ(passed, 10) << "the untracked bucket's burst, on a clock that stands still";
  EXPECT_EQ(stat(FG_TABLE_UNTRACKED_PASS), 10u);
  EXPECT_EQ(stat(FG_TABLE_UNTRACKED_DROP), 30u);
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 0u) << "no slot for a forged ACK's source";
}

TEST_F(SynCookieTest, AVerifiedSourceWithoutASlotIsHeldToTheUntrackedBucket) {
  // the cap refuses the next verified source a slot: each of its SYNs meets a cookie
  // again, and each valid ACK would open one more connection past the rule's limit
  int dropped = 0;
  const int passed = handshakesPastTheVerifiedCap(ExceedAction::kDrop, &dropped);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_VERIFIED), 31u);
  EXPECT_EQ(stat(FG_TABLE_VERIFIED_SLOT), 1u);
  EXPECT_EQ(stat(FG_TABLE_CAPPED), 30u) << "each ACK refused a slot by the verified cap";
  EXPECT_EQ(passed + dropped, 30);
  EXPECT_EQ(passed, 10) << "the untracked bucket's burst, on a clock that stands still";
  EXPECT_EQ(stat(FG_TABLE_UNTRACKED_PASS), 10u);
  EXPECT_EQ(stat(FG_TABLE_UNTRACKED_DROP), 20u);
  EXPECT_EQ(ruleVerdict(FG_VERDICT_DROP), 20u);
  // the first source's ACK and next SYN (handshake), then the burst of the untracked bucket
  EXPECT_EQ(ruleVerdict(FG_VERDICT_PASS), 12u);
}

// A flood of made-up cookies empties the rule's untracked bucket; a source that completes
// its handshakes, left without a slot, has a bucket of its own that the flood cannot reach.
TEST_F(SynCookieTest, MadeUpCookiesCannotStarveAVerifiedSourceWithoutASlot) {
  int dropped = 0;
  const int passed = handshakesPastTheVerifiedCap(ExceedAction::kDrop, &dropped, 40);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_FAILED), 40u);
  EXPECT_EQ(passed, 10) << "the verified sources' bucket is full whatever the forged ACKs did";
  EXPECT_EQ(dropped, 20);
  EXPECT_EQ(stat(FG_TABLE_UNTRACKED_PASS), 10u + 10u) << "forged ACKs, then verified ones";
  EXPECT_EQ(stat(FG_TABLE_UNTRACKED_DROP), 30u + 20u) << "forged ones and verified ones";
}

// A verified source the untracked bucket refuses went over no limit of its own (it has no
// slot): a banning rule drops its ACK and bans nothing, as for any source without a slot.
TEST_F(SynCookieTest, ABanningRuleBansNoVerifiedSourceWithoutASlot) {
  int dropped = 0;
  EXPECT_EQ(handshakesPastTheVerifiedCap(ExceedAction::kBan, &dropped), 10);
  EXPECT_EQ(dropped, 20);
  auto settings = limiter().settings();
  ASSERT_TRUE(settings.ok()) << settings.error().message;
  EXPECT_EQ(settings->ban_entries[0], 0u);
}

TEST_F(SynCookieTest, ARuleThatOnlyMonitorsLetsAVerifiedSourceWithoutASlotThrough) {
  int dropped = 0;
  EXPECT_EQ(handshakesPastTheVerifiedCap(ExceedAction::kMonitor, &dropped), 30);
  EXPECT_EQ(stat(FG_TABLE_UNTRACKED_DROP), 20u) << "still counted as over the limit";
  EXPECT_EQ(ruleVerdict(FG_VERDICT_MONITOR), 20u);
  EXPECT_EQ(ruleVerdict(FG_VERDICT_DROP), 0u);
}

TEST_F(SynCookieTest, AnAckWithTheCookieOfAnotherConnectionFails) {
  load({cookieRule(SynCookies::kAlways)});
  std::vector<uint8_t> syn = segment("192.0.2.20", kSyn, 1000, 0, 1460), synack, out;
  ASSERT_EQ(runOut(syn, synack), XDP_TX);
  uint32_t cookie = get32(synack, 14 + 20 + 4);
  // the same cookie from another address, another port, or another sequence number
  runOut(segment("192.0.2.21", kAck, 1001, cookie + 1), out);
  runOut(segment("192.0.2.20", kAck, 1001, cookie + 1, 0, 40001), out);
  runOut(segment("192.0.2.20", kAck, 2001, cookie + 1), out);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_FAILED), 3u);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_VERIFIED), 0u);
}

TEST_F(SynCookieTest, OnlySynsAndBareAcksToAListenerAreLookedAt) {
  load({cookieRule(SynCookies::kAlways)});
  std::vector<uint8_t> out;
  // a SYN-ACK, a reset and an ACK to a port nobody listens on go to the rules untouched
  EXPECT_EQ(runOut(segment("192.0.2.30", kSyn | kAck, 1, 2), out), XDP_PASS);
  EXPECT_EQ(runOut(segment("192.0.2.30", kRst | kAck, 1, 2), out), XDP_PASS);
  PacketBuilder other;
  other.eth().ipv4("192.0.2.30", kServerV4).tcp(1, kAck).tcpSeq(1, 2);
  EXPECT_EQ(runOut(other.build(), out), XDP_PASS);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT) + stat(FG_TABLE_COOKIE_FAILED), 0u);
}

// A SYN-ACK's source is the SYN's destination: one to a multicast, broadcast, loopback,
// unspecified, reserved or IPv4-mapped address gets no cookie, so no frame leaves from an
// address no host owns.
TEST_F(SynCookieTest, SynsToAddressesNoHostAnswersFromGetNoCookie) {
  load({cookieRule(SynCookies::kAlways)});
  std::vector<uint8_t> out;
  int source = 1;
  auto synTo = [&](const std::string& dst) {
    PacketBuilder syn;
    syn.eth();
    if (dst.find(':') != std::string::npos) {
      syn.ipv6("2001:db8:" + std::to_string(source++) + "::1", dst);
    } else {
      syn.ipv4("192.0.2." + std::to_string(source++), dst);
    }
    return syn.tcp(listener_.port(), kSyn).tcpSeq(1, 0).tcpMss(1460).build();
  };
  for (const char* dst : {"224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1",
                          "127.0.0.1", "0.0.0.0", "ff02::1", "::1", "::", "::ffff:198.51.100.1"}) {
    EXPECT_NE(runOut(synTo(dst), out), XDP_TX) << dst;
  }
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 0u);
  // the same SYN to an address of the host's gets its cookie
  EXPECT_EQ(runOut(synTo(kServerV4), out), XDP_TX);
  EXPECT_EQ(runOut(synTo(kServerV6), out), XDP_TX);
  EXPECT_EQ(runOut(synTo("223.255.255.254"), out), XDP_TX);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 3u);
}

// A SYN-ACK goes to the SYN's source: one from a broadcast, multicast, loopback or reserved
// address, from the host's own address, from a group MAC or to one, gets no cookie (a sender on
// the link would otherwise have floodgate answer to every host, or to itself).
TEST_F(SynCookieTest, SynsFromAddressesNoHostSendsFromGetNoCookie) {
  load({cookieRule(SynCookies::kAlways)});
  std::vector<uint8_t> out;
  auto synFrom = [&](const std::string& src) { return segment(src, kSyn, 1, 0, 1460); };
  for (const char* src : {"224.0.0.1", "255.255.255.255", "240.0.0.1", "127.0.0.1", "0.0.0.0",
                          kServerV4, "ff02::1", "::1", "::", "::ffff:192.0.2.1", kServerV6}) {
    EXPECT_NE(runOut(synFrom(src), out), XDP_TX) << src;
  }
  std::vector<uint8_t> group_mac = synFrom("192.0.2.78");
  group_mac[6] |= 1;
  EXPECT_NE(runOut(group_mac, out), XDP_TX) << "a group MAC as the source";
  std::vector<uint8_t> broadcast = synFrom("192.0.2.79");
  std::fill(broadcast.begin(), broadcast.begin() + 6, 0xff);
  EXPECT_NE(runOut(broadcast, out), XDP_TX) << "a SYN sent to every station";
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 0u);
  EXPECT_EQ(runOut(synFrom("192.0.2.77"), out), XDP_TX);
  EXPECT_EQ(runOut(synFrom("2001:db8:77::1"), out), XDP_TX);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 2u);
}

// A TCP socket on one port: listening on one address (IP_FREEBIND, so the address need not
// be this namespace's), or bound and not listening, which holds the port with no listener.
class PortSocket {
 public:
  PortSocket(const char* address, bool listening) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int on = 1;
    setsockopt(fd_, IPPROTO_IP, IP_FREEBIND, &on, sizeof(on));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    inet_pton(AF_INET, address, &addr.sin_addr);
    socklen_t len = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        (listening && listen(fd_, 16) != 0) ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot bind " << address << ": " << strerror(errno);
    }
    port_ = ntohs(addr.sin_port);
  }
  ~PortSocket() { close(fd_); }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// A SYN is answered only where a socket of this host listens for it: a SYN to a port the
// host forwards or translates to a backend (no listener here, or one bound to another
// address) goes on to the rules, and its backend makes the handshake.
TEST_F(SynCookieTest, SynsNoSocketHereListensForGetNoCookie) {
  PortSocket unheard("0.0.0.0", false);
  PortSocket one_address(kServerV4, true);
  RuleSpec rule = cookieRule(SynCookies::kAlways);
  rule.dst_ports.push_back({unheard.port(), unheard.port()});
  rule.dst_ports.push_back({one_address.port(), one_address.port()});
  load({rule});
  std::vector<uint8_t> out;
  int source = 60;
  auto syn = [&](const char* dst, uint16_t port) {
    PacketBuilder builder;
    builder.eth().ipv4("192.0.2." + std::to_string(source++), dst);
    return builder.tcp(port, kSyn).tcpSeq(1, 0).tcpMss(1460).build();
  };
  // each a new source: the rule admits it into the stack
  EXPECT_EQ(runOut(syn(kServerV4, unheard.port()), out), XDP_PASS);
  EXPECT_EQ(runOut(syn("198.51.100.2", one_address.port()), out), XDP_PASS);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 0u);
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 2u);
  // where something listens, the same SYN gets its cookie
  EXPECT_EQ(runOut(syn(kServerV4, one_address.port()), out), XDP_TX);
  EXPECT_EQ(runOut(syn(kServerV4, listener_.port()), out), XDP_TX);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 2u);
}

TEST_F(SynCookieTest, AutoSendsCookiesOnlyWhileTheNewSourceCapRefuses) {
  loadAutoWithACapOfOne();
  std::vector<uint8_t> out;
  // the first new source takes a slot; the second is capped (and counted); from then on,
  // while the cap keeps refusing, new sources get cookies
  EXPECT_EQ(runOut(segment("192.0.2.40", kSyn, 1, 0, 1460), out), XDP_PASS);
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 1u);
  runOut(segment("192.0.2.41", kSyn, 1, 0, 1460), out);
  EXPECT_EQ(stat(FG_TABLE_CAPPED), 1u);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 0u);
  EXPECT_EQ(runOut(segment("192.0.2.42", kSyn, 1, 0, 1460), out), XDP_TX);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 1u);
  // two quiet seconds: the cap admits again and auto stops answering
  setClock(100000 + 2 * 250);
  EXPECT_EQ(runOut(segment("192.0.2.43", kSyn, 1, 0, 1460), out), XDP_PASS);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 1u);
}

// In auto mode a SYN in IPv4 options meets the rules as any SYN while auto sends no cookies
// (it takes a slot under the cap), and the untracked bucket while it does.
TEST_F(SynCookieTest, AutoHoldsWrappedSynsToTheUntrackedBucketOnlyWhileItSendsCookies) {
  loadAutoWithACapOfOne();
  auto withOptions = [&](const std::string& src) {
    return withIpv4Options(segment(src, kSyn, 1, 0, 1460), 14);
  };
  std::vector<uint8_t> out;
  EXPECT_EQ(runOut(withOptions("192.0.2.40"), out), XDP_PASS);
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 1u) << "auto is off: a slot under the cap";
  EXPECT_EQ(stat(FG_TABLE_UNTRACKED_PASS), 0u);
  runOut(withOptions("192.0.2.41"), out);
  ASSERT_EQ(stat(FG_TABLE_CAPPED), 1u);                      // auto is on from here
  const uint64_t untracked = stat(FG_TABLE_UNTRACKED_PASS);  // the capped SYN's
  EXPECT_EQ(runOut(withOptions("192.0.2.42"), out), XDP_PASS);
  EXPECT_EQ(stat(FG_TABLE_UNTRACKED_PASS), untracked + 1);
  EXPECT_EQ(stat(FG_TABLE_CAPPED), 1u) << "charged without asking the cap";
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 1u);
  // such SYNs are charged to the cap as cookies are, so a flood of them alone keeps auto
  // on: one at 0.9 s finds the cap spent, and half a second later a plain SYN gets a cookie
  setClock(100000 + 225);
  EXPECT_EQ(runOut(withOptions("192.0.2.43"), out), XDP_PASS);
  setClock(100000 + 375);
  EXPECT_EQ(runOut(segment("192.0.2.44", kSyn, 1, 0, 1460), out), XDP_TX);
}

// In auto mode a SYN that gets no cookie (no listener for it here) goes on to the rules,
// which charge it to the new-source cap: the cookie step must not have charged it first,
// or each such SYN takes two of the cap's admissions and new sources are refused early.
TEST_F(SynCookieTest, AutoChargesASynThatGetsNoCookieToTheCapOnce) {
  PortSocket unheard("0.0.0.0", false);
  RuleSpec rule = cookieRule(SynCookies::kAuto);
  rule.dst_ports.push_back({unheard.port(), unheard.port()});
  rule.new_sources_per_s = 2;  // one each half second
  AttachOptions options;
  options.test_clock_hz = 250;
  load({rule}, options);
  setClock(100000);
  std::vector<uint8_t> out;
  for (const char* source : {"192.0.2.70", "192.0.2.71"}) {
    runOut(segment(source, kSyn, 1, 0, 1460), out);
  }
  ASSERT_EQ(stat(FG_TABLE_NEW_SOURCE), 1u);
  ASSERT_EQ(stat(FG_TABLE_CAPPED), 1u);  // auto is on from here
  // half a second on: one admission is back, and auto is still on
  setClock(100000 + 125);
  PacketBuilder builder;
  builder.eth().ipv4("192.0.2.73", kServerV4);
  runOut(builder.tcp(unheard.port(), kSyn).tcpSeq(1, 0).tcpMss(1460).build(), out);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 0u);
  EXPECT_EQ(stat(FG_TABLE_NEW_SOURCE), 2u) << "the cookie step took the admission first";
  EXPECT_EQ(stat(FG_TABLE_CAPPED), 1u);
}

TEST_F(SynCookieTest, MonitorModeSendsNoCookies) {
  AttachOptions options;
  options.monitor = true;
  load({cookieRule(SynCookies::kAlways)}, options);
  std::vector<uint8_t> out;
  EXPECT_EQ(runOut(segment("192.0.2.50", kSyn, 1, 0, 1460), out), XDP_PASS);
  EXPECT_EQ(stat(FG_TABLE_COOKIE_SENT), 0u);
}

TEST(SynCookieRules, CookiesNeedASourceRuleThatMatchesTcpSyns) {
  RuleSpec rule;
  rule.name = "r";
  rule.limit.pps = 10;
  rule.limit.burst = 10;
  rule.syn_cookies = SynCookies::kAlways;
  EXPECT_FALSE(compileRule(rule).ok()) << "any protocol";
  rule.protocol = Protocol::kTcp;
  EXPECT_TRUE(compileRule(rule).ok());
  rule.tcp_flags_set = kAck;
  EXPECT_FALSE(compileRule(rule).ok()) << "ACKs only";
  rule.tcp_flags_set = kSyn;
  rule.tcp_flags_clear = kAck | kFin | kRst;
  EXPECT_TRUE(compileRule(rule).ok());
  // a SYN meets a cookie rule as a plain one: a rule leaving out SYNs with ECE, CWR, PSH or
  // URG would answer them anyway
  for (int flag : {0x40, 0x80, 0x08, 0x20, int{kSyn}}) {
    rule.tcp_flags_clear = static_cast<uint8_t>(kAck | flag);
    EXPECT_FALSE(compileRule(rule).ok()) << "clears " << flag;
  }
  rule.tcp_flags_clear = kAck;
  rule.key = KeyKind::kGlobal;
  EXPECT_FALSE(compileRule(rule).ok()) << "a global key";
}

}  // namespace
// The XDP object asks nothing of the kernel that only SYN cookies need: the handover's kfunc
// (bpf_sk_assign_tcp_reqsk, Linux 6.9) lives in an object of its own, loaded only while a
// rule gives cookies, so floodgate loads on kernels without it (Debian 12's 6.1).
bool objectCallsKfunc(const void* elf, size_t size, const char* kfunc) {
  bpf_object* object = bpf_object__open_mem(elf, size, nullptr);
  EXPECT_NE(object, nullptr);
  if (!object) return true;
  const btf* types = bpf_object__btf(object);
  const bool found = types && btf__find_by_name_kind(types, kfunc, BTF_KIND_FUNC) >= 0;
  bpf_object__close(object);
  return found;
}

TEST(SynCookieObjects, OnlyTheHandoverObjectNeedsTheLinux69Kfunc) {
  size_t size = 0;
  const void* xdp = floodgate_bpf__elf_bytes(&size);
  EXPECT_FALSE(objectCallsKfunc(xdp, size, "bpf_sk_assign_tcp_reqsk"));
  const void* handover = syncookie_tc_bpf__elf_bytes(&size);
  EXPECT_TRUE(objectCallsKfunc(handover, size, "bpf_sk_assign_tcp_reqsk"))
      << "the check above would pass whatever the objects held";
}

}  // namespace floodgate::test
