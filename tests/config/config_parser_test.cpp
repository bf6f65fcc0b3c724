// SPDX-License-Identifier: MIT
// floodgate.yaml parsing: every field into FloodgateConfig and RuleSpec, units, list files.
#include "floodgate/core/config_parser.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/cidr_file.h"
#include "config/floodgate_config.h"
#include "floodgate/common/read_file.h"

namespace floodgate::config {
namespace {

namespace fs = std::filesystem;

FloodgateConfig parseClean(const std::string& text, const std::string& file = "test.yaml") {
  Diagnostics diagnostics;
  FloodgateConfig config = parseConfig(text, file, diagnostics);
  EXPECT_TRUE(diagnostics.empty()) << diagnostics.format();
  return config;
}

std::string parseErrors(const std::string& text) {
  Diagnostics diagnostics;
  parseConfig(text, "test.yaml", diagnostics);
  return diagnostics.format();
}

// A directory of its own under the system temp dir, removed with the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "fg-config-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(ConfigParser, AnAdaptiveSectionWithItsDefaultsAndFloors) {
  FloodgateConfig config = parseClean(R"(
interfaces:
  - eth0
  - name: eth1
    adaptive:
      capacity: {pps: 200k, bps: 1Gbit}
      floors:
        per-source: {pps: 100}
        bytes: {bps: 10Mbit, burst_bytes: 20k}
      step: 0.7
      interval: 500ms
      relax_below: 0.6
      relax_after: 1m
  - name: eth2
    adaptive:
      capacity: {pps: 50k}
      floors: {per-source: {pps: 10, burst: 2}}
rules:
  - name: per-source
    limit: {pps: 1k, burst: 200}
  - name: bytes
    limit: {bps: 100Mbit}
)");
  ASSERT_EQ(config.interfaces.size(), 3u);
  EXPECT_FALSE(config.interfaces[0].adaptive) << "no section, nothing moves";
  ASSERT_TRUE(config.interfaces[1].adaptive);
  const AdaptiveConfig& a = *config.interfaces[1].adaptive;
  EXPECT_EQ(a.capacity_pps, 200000u);
  EXPECT_EQ(a.capacity_bps, 1000000000u);
  ASSERT_EQ(a.floors.size(), 2u);
  EXPECT_EQ(a.floors[0].rule, "per-source");
  // a burst floor not given keeps the rule's burst-to-rate ratio: 200 / 1000 of 100
  EXPECT_EQ(a.floors[0].floor, (LimitSpec{100, 20, 0, 0}));
  EXPECT_EQ(a.floors[1].floor, (LimitSpec{0, 0, 10000000, 20000}));
  EXPECT_DOUBLE_EQ(a.step, 0.7);
  EXPECT_EQ(a.interval_ns, 500000000u);
  EXPECT_DOUBLE_EQ(a.relax_below, 0.6);
  EXPECT_EQ(a.relax_after_ns, 60000000000u);
  // the defaults: 1s, relax below capacity × step after 30s
  const AdaptiveConfig& b = *config.interfaces[2].adaptive;
  EXPECT_EQ(b.floors[0].floor, (LimitSpec{10, 2, 0, 0}));
  EXPECT_DOUBLE_EQ(b.step, 0.5);
  EXPECT_DOUBLE_EQ(b.relax_below, 0.5);
  EXPECT_EQ(b.interval_ns, 1000000000u);
  EXPECT_EQ(b.relax_after_ns, 30000000000u);
}

TEST(ConfigParser, AnAdaptiveSectionNamingARuleWithErrorsAddsNoSecondError) {
  // The rule's own error says it all; "not a rule" on top of it would mislead.
  EXPECT_EQ(parseErrors(R"(interfaces:
  - name: eth0
    adaptive: {capacity: {pps: 1k}, floors: {broken: {pps: 1}}}
rules:
  - name: broken
    limit: {pps: 1k, burst: 0}
)"),
            "test.yaml:6:29: burst must be at least 1 packet, got 0\n");
}

TEST(ConfigParser, InterfacesAndDefaults) {
  FloodgateConfig config = parseClean(R"(
interfaces:
  - eth0
  - {name: eth1, mode: native}
  - name: veth-test
    mode: generic
defaults:
  table_size: 1048576
  list_size: 1k
  malformed: drop
  fragments: drop
  unknown_ipv6_ext: drop
  monitor: true
)");
  ASSERT_EQ(config.interfaces.size(), 3u);
  EXPECT_EQ(config.interfaces[0].name, "eth0");
  EXPECT_EQ(config.interfaces[0].mode, XdpMode::kAuto);
  EXPECT_EQ(config.interfaces[1].mode, XdpMode::kNative);
  EXPECT_EQ(config.interfaces[2].name, "veth-test");
  EXPECT_EQ(config.interfaces[2].mode, XdpMode::kGeneric);
  EXPECT_EQ(config.defaults.table_slots, 1048576u);
  EXPECT_EQ(config.defaults.list_max_entries, 1000u);
  EXPECT_EQ(config.defaults.malformed, FramePolicy::kDrop);
  EXPECT_EQ(config.defaults.fragments, FramePolicy::kDrop);
  EXPECT_EQ(config.defaults.unknown_ext, FramePolicy::kDrop);
  EXPECT_TRUE(config.defaults.monitor);
  EXPECT_FALSE(config.allow.has_value());
  EXPECT_FALSE(config.http.has_value());
}

// yaml-cpp's Load reads the first document alone: a deny list pasted after a `---` line
// would be dropped without a word.
TEST(ConfigParser, ASecondYamlDocumentIsAnErrorAtItsStart) {
  const std::string rules = "rules:\n  - name: r\n    limit: {pps: 10}\n";
  const std::string errors = parseErrors(rules + "---\ndeny: [203.0.113.0/24]\n");
  EXPECT_NE(errors.find("test.yaml:5:1: "), std::string::npos) << errors;
  EXPECT_NE(errors.find("a second YAML document starts here"), std::string::npos) << errors;
  EXPECT_NE(parseErrors(rules + "...\ndeny: [203.0.113.0/24]\n").find("second YAML document"),
            std::string::npos);
  // a leading marker, an end marker with nothing after it, or comments after one: one document
  EXPECT_EQ(parseClean("---\n" + rules + "...\n# the end\n").rules.size(), 1u);
}

TEST(ConfigParser, DefaultsWhenLeftOut) {
  FloodgateConfig config = parseClean("rules:\n  - {name: r, limit: {pps: 100}}\n");
  EXPECT_EQ(config.defaults.table_slots, static_cast<uint32_t>(FG_DEFAULT_TABLE_SLOTS));
  EXPECT_EQ(config.defaults.malformed, FramePolicy::kDrop);
  EXPECT_EQ(config.defaults.fragments, FramePolicy::kPass);
  EXPECT_EQ(config.defaults.unknown_ext, FramePolicy::kDrop);
  EXPECT_EQ(config.defaults.link_control, (LinkControlBudget{1000, 1000}));
  EXPECT_FALSE(config.defaults.monitor);
  ASSERT_EQ(config.rules.size(), 1u);
  const RuleSpec& rule = config.rules[0];
  EXPECT_EQ(rule.id, 0u);
  EXPECT_EQ(rule.epoch, 0u);
  EXPECT_EQ(rule.protocol, Protocol::kAny);
  EXPECT_TRUE(rule.dst_ports.empty());
  EXPECT_TRUE(rule.sources.empty());
  EXPECT_EQ(rule.key, KeyKind::kSource);
  EXPECT_EQ(rule.ipv4_prefix, 32);
  EXPECT_EQ(rule.ipv6_prefix, 64);
  EXPECT_EQ(rule.limit.pps, 100u);
  EXPECT_EQ(rule.limit.burst, 10u);  // a tenth of a second of the rate
  EXPECT_EQ(rule.limit.bits_per_s, 0u);
  EXPECT_EQ(rule.algorithm, Algorithm::kTokenBucket);
  EXPECT_EQ(rule.action, ExceedAction::kDrop);
}

TEST(ConfigParser, TheLinkControlBudget) {
  const std::string rules = "rules:\n  - {name: r, limit: {pps: 100}}\n";
  EXPECT_EQ(parseClean("defaults: {link_control: unlimited}\n" + rules).defaults.link_control,
            (LinkControlBudget{0, 0}));
  // the burst is a second of the rate unless given
  EXPECT_EQ(parseClean("defaults: {link_control: {pps: 2k}}\n" + rules).defaults.link_control,
            (LinkControlBudget{2000, 2000}));
  EXPECT_EQ(parseClean("defaults:\n  link_control: {pps: 2k, burst: 500}\n" + rules)
                .defaults.link_control,
            (LinkControlBudget{2000, 500}));
}

TEST(ConfigParser, ABadLinkControlBudgetSaysWhatToWrite) {
  const std::string rules = "rules:\n  - {name: r, limit: {pps: 100}}\n";
  EXPECT_EQ(parseErrors("defaults: {link_control: {pps: 0}}\n" + rules),
            "test.yaml:1:32: link_control pps must be at least 1; write link_control: unlimited "
            "for no bound\n");
  EXPECT_EQ(parseErrors("defaults: {link_control: {burst: 10}}\n" + rules),
            "test.yaml:1:26: link_control needs a pps (e.g. {pps: 1k}), or write unlimited\n");
  EXPECT_EQ(parseErrors("defaults: {link_control: {pps: 10, burst: 0}}\n" + rules),
            "test.yaml:1:43: burst: '0' is not a positive count (expected e.g. 250, 10k or "
            "1.5M)\n");
  EXPECT_EQ(parseErrors("defaults: {link_control: {pps: 20M}}\n" + rules),
            "test.yaml:1:32: link_control pps must be at most 10000000, not 20000000 (or "
            "unlimited)\n");
  EXPECT_EQ(parseErrors("defaults: {link_control: {pps: 1, burst: 4000}}\n" + rules),
            "test.yaml:1:42: link_control burst takes more than an hour to refill at its rate: "
            "lower the burst or raise the rate\n");
  EXPECT_EQ(parseErrors("defaults: {link_control: {pps: 20M, burst: 5}}\n" + rules),
            "test.yaml:1:32: link_control pps must be at most 10000000, not 20000000 (or "
            "unlimited)\n");
  EXPECT_EQ(parseErrors("defaults: {link_control: 1k}\n" + rules),
            "test.yaml:1:26: link_control must be {pps: N} (a burst too: {pps: N, burst: N}) or "
            "unlimited (got '1k')\n");
  EXPECT_NE(parseErrors("defaults: {link_control: {pps: 10, rate: 5}}\n" + rules), "");
  EXPECT_NE(parseErrors("defaults: {link_control: none}\n" + rules), "");
}

TEST(ConfigParser, EveryRuleField) {
  FloodgateConfig config = parseClean(R"(
rules:
  - name: web.syn_1
    match:
      protocol: tcp
      dst_ports: [80, "8000-8100", " 9000 - 9001 "]
      tcp_flags: {syn: set, ack: clear, fin: clear, rst: clear, psh: clear, urg: clear, ece: clear, cwr: set}
      src: [192.0.2.0/24, "2001:db8::/32"]
    key: {type: source, ipv4_prefix: 24, ipv6_prefix: 48}
    limit: {pps: 1.5k, burst: 3k, bps: 1Gbit, burst_bytes: 64KiB}
    algorithm: token_bucket
    on_exceed: {ban: 10m}
  - name: global-udp
    match: {protocol: udp}
    key: global
    algorithm: fixed_window
    window: 250ms
    limit: {pps: 2M, bps: 800Mbps}
    on_exceed: monitor
  - name: icmp
    match: {protocol: icmp}
    key: {type: global}
    algorithm: sliding_window
    window: 1s
    limit: {pps: 100}
    on_exceed: drop
)");
  ASSERT_EQ(config.rules.size(), 3u);
  const RuleSpec& syn = config.rules[0];
  EXPECT_EQ(syn.name, "web.syn_1");
  EXPECT_EQ(syn.protocol, Protocol::kTcp);
  ASSERT_EQ(syn.dst_ports.size(), 3u);
  EXPECT_EQ(syn.dst_ports[0].first, 80);
  EXPECT_EQ(syn.dst_ports[0].last, 80);
  EXPECT_EQ(syn.dst_ports[1].first, 8000);
  EXPECT_EQ(syn.dst_ports[1].last, 8100);
  EXPECT_EQ(syn.dst_ports[2].first, 9000);
  EXPECT_EQ(syn.dst_ports[2].last, 9001);
  EXPECT_EQ(syn.tcp_flags_set, 0x02 | 0x80);  // SYN, CWR
  EXPECT_EQ(syn.tcp_flags_clear, 0x7d);       // FIN, RST, PSH, ACK, URG, ECE
  ASSERT_EQ(syn.sources.size(), 2u);
  EXPECT_EQ(syn.sources[0].toString(), "192.0.2.0/24");
  EXPECT_EQ(syn.sources[1].toString(), "2001:db8::/32");
  EXPECT_EQ(syn.key, KeyKind::kSource);
  EXPECT_EQ(syn.ipv4_prefix, 24);
  EXPECT_EQ(syn.ipv6_prefix, 48);
  EXPECT_EQ(syn.limit.pps, 1500u);
  EXPECT_EQ(syn.limit.burst, 3000u);
  EXPECT_EQ(syn.limit.bits_per_s, 1000000000u);
  EXPECT_EQ(syn.limit.burst_bytes, 65536u);
  EXPECT_EQ(syn.action, ExceedAction::kBan);
  EXPECT_EQ(syn.ban_ns, 600000000000u);

  const RuleSpec& udp = config.rules[1];
  EXPECT_EQ(udp.protocol, Protocol::kUdp);
  EXPECT_EQ(udp.key, KeyKind::kGlobal);
  EXPECT_EQ(udp.algorithm, Algorithm::kFixedWindow);
  EXPECT_EQ(udp.window_ns, 250000000u);
  EXPECT_EQ(udp.limit.pps, 2000000u);
  EXPECT_EQ(udp.limit.bits_per_s, 800000000u);
  EXPECT_EQ(udp.action, ExceedAction::kMonitor);

  const RuleSpec& icmp = config.rules[2];
  EXPECT_EQ(icmp.protocol, Protocol::kIcmp);
  EXPECT_EQ(icmp.key, KeyKind::kGlobal);
  EXPECT_EQ(icmp.algorithm, Algorithm::kSlidingWindow);
  EXPECT_EQ(icmp.window_ns, 1000000000u);
  EXPECT_EQ(icmp.action, ExceedAction::kDrop);
}

TEST(ConfigParser, UntrackedSourcesAndTheNewSourceCap) {
  FloodgateConfig config = parseClean(R"(
rules:
  - name: capped
    limit: {pps: 100, burst: 20}
    untracked: {new_sources: 2k, pps: 50k, burst: 5k}
  - name: uncapped
    limit: {pps: 100}
    untracked: {new_sources: unlimited}
  - name: defaults
    limit: {pps: 100}
)");
  ASSERT_EQ(config.rules.size(), 3u);
  EXPECT_EQ(config.rules[0].new_sources_per_s, 2000u);
  EXPECT_EQ(config.rules[0].untracked.pps, 50000u);
  EXPECT_EQ(config.rules[0].untracked.burst, 5000u);
  EXPECT_EQ(config.rules[1].new_sources_per_s, 0u);
  EXPECT_EQ(config.rules[1].untracked.pps, 0u) << "no rate: the untracked bucket follows limit";
  EXPECT_EQ(config.rules[2].new_sources_per_s, kDefaultNewSourcesPerS);
}

TEST(ConfigParser, SynCookiesAndTheVerifiedSourceCap) {
  FloodgateConfig config = parseClean(R"(
rules:
  - name: web
    match: {protocol: tcp, dst_ports: [80], tcp_flags: {syn: set, ack: clear}}
    limit: {pps: 30}
    untracked: {verified_sources: 2k}
    syn_cookies: auto
  - name: always
    match: {protocol: tcp}
    limit: {pps: 30}
    syn_cookies: always
  - name: plain
    limit: {pps: 30}
)");
  ASSERT_EQ(config.rules.size(), 3u);
  EXPECT_EQ(config.rules[0].syn_cookies, SynCookies::kAuto);
  EXPECT_EQ(config.rules[0].verified_sources_per_s, 2000u);
  EXPECT_EQ(config.rules[1].syn_cookies, SynCookies::kAlways);
  EXPECT_EQ(config.rules[1].verified_sources_per_s, kDefaultVerifiedSourcesPerS);
  EXPECT_EQ(config.rules[2].syn_cookies, SynCookies::kOff);
}

// The cap counts sources a verified cookie adds; on a rule without cookies it would be
// dropped without a word, and the operator believe the rule capped.
TEST(ConfigParser, AVerifiedSourceCapWithoutSynCookiesIsAnError) {
  for (const char* cookies : {"", ", syn_cookies: off"}) {
    const std::string errors =
        parseErrors(std::string("rules:\n  - {name: web, match: {protocol: tcp}, limit: {pps: 1},"
                                " untracked: {verified_sources: 2k}") +
                    cookies + "}\n");
    EXPECT_EQ(errors,
              "test.yaml:2:88: rule 'web': untracked.verified_sources caps the sources SYN "
              "cookies verify, and this rule has none: remove it, or set syn_cookies: always or "
              "auto\n")
        << cookies;
  }
}

TEST(ConfigParser, SynCookiesOnARuleNoSynMeetsIsAnError) {
  EXPECT_NE(parseErrors("rules:\n  - {name: r, limit: {pps: 1}, syn_cookies: always}\n")
                .find("syn_cookies needs a rule that matches TCP SYNs"),
            std::string::npos);
  EXPECT_NE(parseErrors("rules:\n  - {name: r, match: {protocol: tcp}, limit: {pps: 1}, "
                        "syn_cookies: maybe}\n")
                .find("syn_cookies must be off, always or auto"),
            std::string::npos);
  EXPECT_NE(parseErrors("rules:\n  - {name: r, match: {protocol: tcp, tcp_flags: {ack: set}}, "
                        "limit: {pps: 1}, syn_cookies: auto}\n")
                .find("syn_cookies needs"),
            std::string::npos);
}

TEST(ConfigParser, ReturningSourcesAndHowLongTheyAreRemembered) {
  FloodgateConfig config = parseClean(R"(
rules:
  - name: dns
    limit: {pps: 30}
    untracked: {returning_sources: 2k, remember_for: 10m}
  - name: open
    limit: {pps: 30}
    untracked: {returning_sources: unlimited}
  - name: forgetful
    limit: {pps: 30}
    untracked: {returning_sources: off}
  - name: plain
    limit: {pps: 30}
)");
  ASSERT_EQ(config.rules.size(), 4u);
  EXPECT_EQ(config.rules[0].returning_sources_per_s, 2000u);
  EXPECT_EQ(config.rules[0].remember_ns, 600'000'000'000ULL);
  EXPECT_EQ(config.rules[1].returning_sources_per_s, 0u);
  EXPECT_EQ(config.rules[1].remember_ns, kDefaultRememberNs);
  EXPECT_EQ(config.rules[2].remember_ns, 0u);
  EXPECT_EQ(config.rules[3].returning_sources_per_s, kDefaultReturningSourcesPerS);
  EXPECT_EQ(config.rules[3].remember_ns, kDefaultRememberNs);
  for (const RuleSpec& rule : config.rules) EXPECT_FALSE(rule.remember_connected) << rule.name;
}

TEST(ConfigParser, RememberOnlyConnectedSources) {
  FloodgateConfig config = parseClean(R"(
rules:
  - name: web
    match: {protocol: tcp, dst_ports: [443]}
    limit: {pps: 30}
    untracked: {remember: connected}
  - name: any-protocol
    limit: {pps: 30}
    untracked: {remember: connected, remember_for: 10m}
  - name: dns
    match: {protocol: udp}
    limit: {pps: 30}
    untracked: {remember: seen}
)");
  ASSERT_EQ(config.rules.size(), 3u);
  EXPECT_TRUE(config.rules[0].remember_connected);
  EXPECT_TRUE(config.rules[1].remember_connected);
  EXPECT_EQ(config.rules[1].remember_ns, 600'000'000'000ULL);
  EXPECT_FALSE(config.rules[2].remember_connected);
}

TEST(ConfigParser, BadReturningSourcesSayWhatToWrite) {
  auto errors = [](const std::string& untracked) {
    return parseErrors("rules:\n  - {name: r, limit: {pps: 1}, untracked: " + untracked + "}\n");
  };
  EXPECT_NE(errors("{returning_sources: 0}").find("write unlimited for no cap or off"),
            std::string::npos);
  EXPECT_NE(errors("{returning_sources: lots}").find("returning_sources"), std::string::npos);
  EXPECT_NE(errors("{remember_for: 2d}").find("at most 1d"), std::string::npos);
  EXPECT_NE(errors("{remember_for: 0s}").find("remember_for: '0s' is not a duration"),
            std::string::npos);
  EXPECT_NE(errors("{returning_sources: off, remember_for: 1h}")
                .find("remember_for goes with returning_sources other than off"),
            std::string::npos);
  EXPECT_NE(parseErrors("rules:\n  - {name: r, key: global, limit: {pps: 1}, untracked: "
                        "{returning_sources: 1k}}\n")
                .find("untracked goes with key: source"),
            std::string::npos);
}

TEST(ConfigParser, DefaultByteBurstIsATenthOfASecondAndAtLeastOneFrame) {
  FloodgateConfig config = parseClean(R"(
rules:
  - {name: fast, limit: {bps: 1Gbit}}
  - {name: slow, limit: {bps: 64kbit}}
)");
  ASSERT_EQ(config.rules.size(), 2u);
  EXPECT_EQ(config.rules[0].limit.burst_bytes, 12500000u);
  EXPECT_EQ(config.rules[1].limit.burst_bytes, 1518u);
}

TEST(ConfigParser, InlineListsAndEmptyList) {
  FloodgateConfig config = parseClean(R"(
allow: [192.0.2.10, "2001:db8::/48"]
deny:
)");
  ASSERT_TRUE(config.allow.has_value());
  ASSERT_EQ(config.allow->size(), 2u);
  EXPECT_EQ((*config.allow)[0].prefix, 32);
  EXPECT_EQ((*config.allow)[1].family, Family::kV6);
  ASSERT_TRUE(config.deny.has_value());  // an empty `deny:` still owns the list
  EXPECT_TRUE(config.deny->empty());
}

TEST(ConfigParser, ListFilesAreRelativeToTheConfig) {
  TempDir dir;
  fs::create_directories(dir.path() / "lists");
  std::ofstream(dir.path() / "lists/deny.txt") << "# feed\n\n203.0.113.0/24  # a comment\n"
                                                  "  2001:db8:bad::/48\r\n198.51.100.7";
  std::ofstream(dir.path() / "floodgate.yaml") << "deny:\n  - 192.0.2.1\n  - file: lists/deny.txt\n"
                                                  "allow:\n  - file: " +
                                                      (dir.path() / "lists/deny.txt").string() +
                                                      "\n";
  Diagnostics diagnostics;
  FloodgateConfig config = loadConfig((dir.path() / "floodgate.yaml").string(), diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << diagnostics.format();
  ASSERT_EQ(config.deny->size(), 4u);
  EXPECT_EQ((*config.deny)[0].toString(), "192.0.2.1");
  EXPECT_EQ((*config.deny)[1].toString(), "203.0.113.0/24");
  EXPECT_EQ((*config.deny)[2].toString(), "2001:db8:bad::/48");
  EXPECT_EQ((*config.deny)[3].toString(), "198.51.100.7");
  EXPECT_EQ(config.allow->size(), 3u);  // an absolute path works too
}

// A blocklist feed that failed to download leaves an empty file; taken as it is, a reload
// would empty the running deny list. Only an entry that says so may be empty.
TEST(ConfigParser, AListFileWithNoCidrIsAnErrorUnlessItMayBeEmpty) {
  TempDir dir;
  std::ofstream(dir.path() / "empty.txt") << "";
  std::ofstream(dir.path() / "comments.txt") << "# nothing today\n\n";
  const std::string config = (dir.path() / "floodgate.yaml").string();
  std::ofstream(config) << "deny:\n  - file: empty.txt\nallow:\n  - file: comments.txt\n";
  Diagnostics diagnostics;
  loadConfig(config, diagnostics);
  const std::string errors = diagnostics.format();
  EXPECT_EQ(diagnostics.size(), 2u) << errors;
  EXPECT_NE(errors.find("floodgate.yaml:2:11: CIDR file '"), std::string::npos) << errors;
  EXPECT_NE(errors.find("empty.txt' holds no CIDR, which would empty the running list"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("comments.txt' holds no CIDR"), std::string::npos) << errors;
  std::ofstream(config) << "deny:\n  - file: empty.txt\n    may_be_empty: true\n"
                           "allow: [{file: comments.txt, may_be_empty: true}]\n";
  Diagnostics allowed;
  FloodgateConfig loaded = loadConfig(config, allowed);
  EXPECT_TRUE(allowed.empty()) << allowed.format();
  EXPECT_TRUE(loaded.deny && loaded.deny->empty());
  EXPECT_TRUE(loaded.allow && loaded.allow->empty());
}

// A file named again in the same list (by a YAML alias, another spelling of its path, a
// symbolic or hard link to it) is read once: its prefixes are in already, and a hostile config
// repeating one large file by aliases must not make every parse read it hundreds of thousands of
// times.
TEST(ConfigParser, AFileNamedAgainInOneListIsReadOnce) {
  TempDir dir;
  std::ofstream(dir.path() / "deny.txt") << "192.0.2.1\n192.0.2.2\n2001:db8::/48\n";
  std::filesystem::create_symlink("deny.txt", dir.path() / "link.txt");
  std::filesystem::create_hard_link(dir.path() / "deny.txt", dir.path() / "hard.txt");
  const std::string config = (dir.path() / "floodgate.yaml").string();
  std::ofstream(config) << "deny: [&f {file: deny.txt}, *f, *f, {file: ./deny.txt}, {file: "
                        << (dir.path() / "deny.txt").string()
                        << "}, {file: link.txt}, {file: hard.txt}]\nallow: [*f]\n";
  Diagnostics diagnostics;
  FloodgateConfig loaded = loadConfig(config, diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << diagnostics.format();
  ASSERT_TRUE(loaded.deny);
  EXPECT_EQ(loaded.deny->size(), 3u);
  ASSERT_TRUE(loaded.allow);
  EXPECT_EQ(loaded.allow->size(), 3u) << "each list reads it once";
}

// More interfaces than any host attaches XDP to is refused in one line, before any is looked
// at (each apply of the daemon goes through all of them).
TEST(ConfigParser, TooManyInterfacesAreRefused) {
  std::string text = "interfaces:\n";
  for (int i = 0; i < 4097; ++i) text += "  - e" + std::to_string(i) + "\n";
  Diagnostics diagnostics;
  parseConfig(text, "test.yaml", diagnostics);
  const std::string errors = diagnostics.format();
  EXPECT_EQ(diagnostics.size(), 1u) << errors;
  EXPECT_NE(errors.find("interfaces lists 4097 interfaces, more than the 4096 floodgate takes"),
            std::string::npos)
      << errors;
}

TEST(ConfigParser, LoadsAHundredThousandPrefixFile) {
  TempDir dir;
  {
    std::ofstream out(dir.path() / "big.txt");
    out << "# 100k prefixes: 80k IPv4 /32s and 20k IPv6 /64s\n";
    for (int i = 0; i < 80000; ++i) {
      out << "10." << (i >> 16) << "." << ((i >> 8) & 255) << "." << (i & 255) << "\n";
    }
    for (int i = 0; i < 20000; ++i) out << "2001:db8:" << std::hex << i << std::dec << "::/64\n";
  }
  std::ofstream(dir.path() / "floodgate.yaml") << "deny:\n  - file: big.txt\n";
  Diagnostics diagnostics;
  FloodgateConfig config = loadConfig((dir.path() / "floodgate.yaml").string(), diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << diagnostics.format();
  ASSERT_EQ(config.deny->size(), 100000u);
  EXPECT_EQ(config.deny->front().toString(), "10.0.0.0");
  EXPECT_EQ((*config.deny)[79999].toString(), "10.1.56.127");
  EXPECT_EQ(config.deny->back().toString(), "2001:db8:4e1f::/64");
}

TEST(ConfigParser, AListFileMustBeARegularFileOfBoundedSize) {
  TempDir dir;
  const std::string fifo = (dir.path() / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  {
    // sparse: a file that says it is larger than the cap, without writing it
    std::ofstream huge(dir.path() / "huge.txt");
    huge.seekp(kMaxListFileBytes);
    huge << "\n";
  }
  for (auto [name, reason] :
       {std::pair{fifo, "not a regular file (a FIFO)"},
        std::pair{std::string("/dev/zero"), "not a regular file (a character device)"},
        std::pair{(dir.path() / "huge.txt").string(), "larger than 64 MiB, the most it may be"},
        std::pair{dir.path().string(), "not a regular file (a directory)"}}) {
    std::ofstream(dir.path() / "floodgate.yaml") << "deny:\n  - file: " << name << "\n";
    Diagnostics diagnostics;
    loadConfig((dir.path() / "floodgate.yaml").string(), diagnostics);  // returns: no hang
    ASSERT_EQ(diagnostics.size(), 1u) << name;
    EXPECT_EQ(diagnostics.items()[0].message, "cannot read CIDR file '" + name + "': " + reason);
  }
}

TEST(ConfigParser, ABadLineOfAListFileIsReportedWithoutItsText) {
  TempDir dir;
  std::ofstream(dir.path() / "secret.txt") << "203.0.113.0/24\nroot:$6$saltsalt$hashhash:19000\n";
  std::ofstream(dir.path() / "floodgate.yaml") << "deny:\n  - file: secret.txt\n";
  Diagnostics diagnostics;
  loadConfig((dir.path() / "floodgate.yaml").string(), diagnostics);
  const std::string text = diagnostics.format();
  EXPECT_NE(text.find("secret.txt:2:1: not a CIDR"), std::string::npos) << text;
  EXPECT_EQ(text.find("root"), std::string::npos) << text;
  EXPECT_EQ(text.find("hash"), std::string::npos) << text;
}

// `--config /etc/floodgate/fleet.key` by mistake: the daemon logs the error, and the key must
// not be in the journal.
TEST(ConfigParser, AFileOfPlainTextIsRefusedWithoutItsText) {
  const std::string errors = parseErrors("0123456789abcdef0123456789abcdef\n");
  EXPECT_EQ(errors,
            "test.yaml:1:1: the config must be a mapping of interfaces, defaults, allow, deny, "
            "rules, http, fleet (got plain text: is this the right file?)\n");
  // the http: loader, given the same file
  auto http = http::parseHttpConfigText("hunter2hunter2\n", "key.txt");
  ASSERT_FALSE(http.ok());
  EXPECT_EQ(http.error().message.find("hunter2"), std::string::npos) << http.error().message;
}

TEST(ConfigParser, ACatchAllOrAMappedPrefixIsWarnedAbout) {
  FloodgateConfig config = parseClean(
      "allow: [0.0.0.0/0, 192.0.2.1]\n"
      "deny: [\"::/0\", \"::ffff:198.51.100.0/120\", \"2001:db8::/32\"]\n");
  EXPECT_EQ(configWarnings(config),
            (std::vector<std::string>{
                "allow holds 0.0.0.0/0: it lets through, unlimited, every IPv4 source",
                "deny holds ::/0: it drops every IPv6 source",
                "deny holds ::ffff:198.51.100.0/120, an IPv4-mapped IPv6 prefix: no packet carries "
                "one as its source, so it never matches (for IPv4 sources write "
                "198.51.100.0/24)"}));
  EXPECT_TRUE(configWarnings(parseClean("allow: [10.0.0.0/8]\n")).empty());
}

// A rule's source set takes IPv6 prefixes as written: a mapped one limits nobody.
TEST(ConfigParser, UnicastPrefixesWiderThanAnyNetworksAreWarnedAboutOnce) {
  FloodgateConfig config = parseClean(
      "deny: [64.0.0.0/2, 10.0.0.0/8, \"2000::/3\", \"2001:db8::/32\", \"2400::/12\"]\n"
      "allow: [10.0.0.0/7]\n"
      "rules:\n  - {name: r, limit: {pps: 100}}\n");
  EXPECT_EQ(configWarnings(config),
            (std::vector<std::string>{
                "allow holds 10.0.0.0/7, wider than any one network's (a /8 of IPv4, a /12 of "
                "IPv6): it lets through, unlimited, every source in it; check the length",
                "deny holds 64.0.0.0/2 (and 1 more), wider than any one network's (a /8 of IPv4, "
                "a /12 of IPv6): each drops every source in it; check the length"}));
  // bogon and private blocks are wide on purpose: multicast, reserved, ULA, outside 2000::/3
  EXPECT_TRUE(
      cidrWarnings({*parseCidr("224.0.0.0/4"), *parseCidr("240.0.0.0/4"), *parseCidr("fc00::/7"),
                    *parseCidr("ff00::/8"), *parseCidr("4000::/2"), *parseCidr("fe80::/10")},
                   "deny", "drops")
          .empty());
}

TEST(ConfigParser, SectionsWithEveryEntryCommentedOutAreWarnedAbout) {
  const std::string rules = "rules:\n  - {name: r, limit: {pps: 100}}\n";
  EXPECT_EQ(configWarnings(parseClean("rules:\n#  - {name: r, limit: {pps: 100}}\n")),
            std::vector<std::string>{
                "rules is empty: no rule limits anything on an interface this config is "
                "attached to; add a rule (e.g. - {name: per-source, limit: {pps: 1k}}), or "
                "write rules: [] if none is meant"});
  EXPECT_EQ(configWarnings(parseClean("fleet:\n  bans:\n" + rules)),
            std::vector<std::string>{"fleet.bans is empty: fleet bans are off (none is shared "
                                     "or received); fill it in, or remove the key"});
  EXPECT_EQ(configWarnings(parseClean("fleet:\nhttp:\n" + rules)),
            (std::vector<std::string>{
                "http is empty: the HTTP limits are off (no policy, no escalation); fill it "
                "in, or remove the key",
                "fleet is empty: fleet bans are off (none is shared or received); fill it in, "
                "or remove the key"}));
  // none meant, written out; a config of lists alone, or of interfaces and bans from elsewhere
  EXPECT_TRUE(configWarnings(parseClean("deny: [192.0.2.1]\nrules: []\n")).empty());
  EXPECT_TRUE(configWarnings(parseClean("deny: [192.0.2.1]\n")).empty());
  EXPECT_TRUE(configWarnings(parseClean("interfaces: [eth0]\ndeny: [192.0.2.1]\n")).empty());
}

// A token bucket's time per packet or byte is a whole number of 1/65536 ns, rounded up: past
// 524 Gbit/s (and 65 G packets a second) a rate can run more than 0.1% lower than written,
// which is said.
TEST(ConfigParser, ARateThatRunsLowerThanWrittenIsWarnedAbout) {
  FloodgateConfig config = parseClean(
      "rules:\n"
      "  - {name: all, key: global, limit: {bps: 10Tbit, pps: 100M}}\n"
      "  - {name: src, limit: {pps: 1k}, untracked: {pps: 1000G}}\n"
      "  - {name: win, algorithm: fixed_window, window: 1ms, limit: {bps: 10Tbit}}\n");
  EXPECT_EQ(configWarnings(config),
            (std::vector<std::string>{
                "rule all: bps 10Tbit runs at 9.9Tbit, 1.08% lower: the program keeps a byte's "
                "time in whole 1/65536 ns, too coarse a step for a rate this high; floodgate "
                "status shows the rate that runs",
                "rule src: untracked pps 1000G runs at 993G, 0.70% lower: the program keeps a "
                "packet's time in whole 1/65536 ns, too coarse a step for a rate this high; "
                "floodgate status shows the rate that runs"}));
  EXPECT_TRUE(configWarnings(parseClean("rules:\n  - {name: r, key: global, limit: {pps: 1G, "
                                        "bps: 400Gbit}}\n"))
                  .empty());
}

TEST(ConfigParser, AMappedPrefixInARulesSourcesIsWarnedAbout) {
  FloodgateConfig config = parseClean(
      "rules:\n"
      "  - {name: nets, match: {src: [\"::ffff:10.0.0.0/104\", \"::/0\", 192.0.2.0/24]},\n"
      "     limit: {pps: 10}}\n"
      "  - {name: everyone, limit: {pps: 1000}}\n");
  EXPECT_EQ(configWarnings(config),
            (std::vector<std::string>{
                "match.src of rule nets holds ::ffff:10.0.0.0/104, an IPv4-mapped IPv6 prefix: no "
                "packet carries one as its source, so it never matches (for IPv4 sources write "
                "10.0.0.0/8)"}));
}

// Non-first fragments carry no ports: where every rule needs them, fragments meet no rule.
TEST(ConfigParser, CheckWarnsWhenFragmentsMeetNoRule) {
  const std::string port_rule =
      "rules:\n  - {name: dns, match: {protocol: udp, dst_ports: [53]}, limit: {pps: 10}}\n";
  EXPECT_EQ(configWarnings(parseClean(port_rule)),
            (std::vector<std::string>{
                "every rule names ports or TCP flags, which non-first fragments do not carry: "
                "with defaults.fragments pass they meet no rule and pass unlimited; add a rule "
                "without ports (a per-source limit on the protocol) or set defaults.fragments: "
                "drop"}));
  EXPECT_TRUE(configWarnings(parseClean("defaults: {fragments: drop}\n" + port_rule)).empty());
  EXPECT_TRUE(
      configWarnings(parseClean(port_rule + "  - {name: udp, match: {protocol: udp}, limit: "
                                            "{pps: 100}}\n"))
          .empty());
  // a port-less rule that limits only some sources leaves the fragments of every other
  const std::string listed_rule =
      "  - {name: udp, match: {protocol: udp, src: [203.0.113.0/24]}, limit: {pps: 100}}\n";
  EXPECT_EQ(configWarnings(parseClean(port_rule + listed_rule)),
            (std::vector<std::string>{
                "every rule without ports or TCP flags names match.src: non-first fragments from "
                "other sources meet no rule and, with defaults.fragments pass, pass unlimited; add "
                "a rule without ports (a per-source limit on the protocol) or set "
                "defaults.fragments: drop (a rule without match.src)"}));
}

// IPv6 chains the parser cannot follow hide the ports as fragments do; a malformed frame
// passed may hide its source too.
TEST(ConfigParser, CheckWarnsOfEveryPolicyThatPassesFramesNoRuleCanRead) {
  const std::string port_rule =
      "rules:\n  - {name: dns, match: {protocol: udp, dst_ports: [53]}, limit: {pps: 10}}\n";
  EXPECT_EQ(configWarnings(
                parseClean("defaults: {fragments: drop, unknown_ipv6_ext: pass}\n" + port_rule)),
            (std::vector<std::string>{
                "every rule names ports or TCP flags, which IPv6 packets whose extension headers "
                "the parser cannot follow do not carry: with defaults.unknown_ipv6_ext pass they "
                "meet no rule and pass unlimited; add a rule without ports (a per-source limit on "
                "the protocol) or set defaults.unknown_ipv6_ext: drop"}));
  EXPECT_EQ(configWarnings(parseClean("defaults: {fragments: drop, malformed: pass}\n"
                                      "rules:\n  - {name: all, limit: {pps: 10}}\n")),
            (std::vector<std::string>{
                "defaults.malformed pass lets a frame whose source the parser never reached (a "
                "third VLAN tag, a header cut short) through without deny, allow, bans or any "
                "rule, and hides a malformed frame's ports from every port or flag rule; use it "
                "only to watch such frames, then set defaults.malformed: drop"}));
  EXPECT_TRUE(configWarnings(parseClean("defaults: {fragments: drop}\n" + port_rule)).empty());
}

// A client's cookies are one header: a policy keyed by it gives a client a key per cookie it
// adds or order it sends them in.
TEST(ConfigParser, CheckWarnsOnAPolicyKeyedByTheCookieHeader) {
  FloodgateConfig config = parseClean(R"(
http:
  policies:
    - {name: jar, key: header:cookie, algorithm: fixed_window, limit: 300, window_ms: 60000}
    - {name: api, key: header:X-API-Key, algorithm: fixed_window, limit: 300, window_ms: 60000}
)");
  EXPECT_EQ(configWarnings(config),
            std::vector<std::string>{
                "http policy jar keys by the Cookie header, a client's whole cookie jar: one "
                "cookie more, or the same in another order, is another key, so it limits "
                "nobody who does that; key by the session the service reads (key: user)"});
}

TEST(ConfigParser, CheckWarnsOnTrustingEveryProxy) {
  FloodgateConfig config = parseClean(
      "http:\n  trusted_proxies: [10.0.0.1, 0.0.0.0/0, \"::/0\"]\n"
      "  client_header: x-forwarded-for\n");
  const std::string tail =
      ": every client is then believed about who it is, so any client picks its own key and "
      "can get another address banned; list only your proxies";
  EXPECT_EQ(configWarnings(config),
            (std::vector<std::string>{"http.trusted_proxies holds 0.0.0.0/0" + tail,
                                      "http.trusted_proxies holds ::/0" + tail}));
}

TEST(ConfigParser, ListLargerThanListSizeIsAnError) {
  EXPECT_EQ(
      parseErrors("defaults: {list_size: 2}\nallow: [192.0.2.1, 192.0.2.2, 192.0.2.3, \"::1\"]\n"),
      "test.yaml:2:1: allow holds more IPv4 prefixes than defaults.list_size (2): raise it (up "
      "to 16777216) or merge prefixes into shorter ones\n");
}

// A list of many files is read only until the list is past its bound: reading stops there, so
// a config of a few lines cannot stand for more prefixes than memory holds. The entry after
// the stop is never read (its file is missing).
TEST(ConfigParser, AListStopsBeingReadAtItsBound) {
  TempDir dir;
  for (int f = 0; f < 6; ++f) {
    std::ofstream out(dir.path() / ("feed" + std::to_string(f) + ".txt"));
    for (int i = 0; i < 1000; ++i) out << "10." << f << "." << (i >> 8) << "." << (i & 255) << "\n";
  }
  std::string deny = "deny: [&feed {file: feed0.txt}";
  for (int f = 1; f < 6; ++f) deny += ", {file: feed" + std::to_string(f) + ".txt}";
  std::ofstream(dir.path() / "floodgate.yaml") << "defaults: {list_size: 2500}\n"
                                               << deny << ", {file: missing.txt}]\n"
                                               << "rules:\n  - {name: r, match: {src: ["
                                               << "*feed, *feed]}, limit: {pps: 10}}\n";
  Diagnostics diagnostics;
  loadConfig((dir.path() / "floodgate.yaml").string(), diagnostics);
  EXPECT_EQ(diagnostics.format(),
            (dir.path() / "floodgate.yaml").string() +
                ":2:1: deny holds more IPv4 prefixes than defaults.list_size (2500): raise it "
                "(up to 16777216) or merge prefixes into shorter ones\n");
}

// Within one file too: a file of more lines than the list may hold is read only to the line
// that takes one family past its bound, never to its end: the bad line at the end is not
// reported.
TEST(ConfigParser, AFileStopsBeingReadPastItsListsBound) {
  TempDir dir;
  {
    std::ofstream out(dir.path() / "feed.txt");
    for (int i = 0; i < 14; ++i) out << "10.0.0." << i << "\n";
    out << "junk\n";  // line 15: past the eleventh prefix, short of twice the bound
    for (int i = 14; i < 100; ++i) out << "10.0.0." << i << "\n";
    out << "junk\n";
  }
  std::ofstream(dir.path() / "floodgate.yaml")
      << "defaults: {list_size: 10}\nallow: [{file: feed.txt}]\n";
  Diagnostics diagnostics;
  loadConfig((dir.path() / "floodgate.yaml").string(), diagnostics);
  EXPECT_EQ(diagnostics.format(),
            (dir.path() / "floodgate.yaml").string() +
                ":2:1: allow holds more IPv4 prefixes than defaults.list_size (10): raise it "
                "(up to 16777216) or merge prefixes into shorter ones\n");
}

// Feeds overlap (blocklists mostly do): a prefix in two files, or twice in one, is one entry of
// the list and counts once against list_size, as it does in the running limiter. 20 lines, 12
// distinct prefixes, a list_size of 12: accepted, each prefix where it was first listed.
TEST(ConfigParser, APrefixListedTwiceCountsOnceAgainstTheListsBound) {
  TempDir dir;
  {
    std::ofstream a(dir.path() / "a.txt");
    for (int i = 0; i < 10; ++i) a << "10.0.0." << i << "\n";
    std::ofstream b(dir.path() / "b.txt");
    for (int i = 2; i < 12; ++i) b << "10.0.0." << i << "\n";
  }
  std::ofstream(dir.path() / "floodgate.yaml")
      << "defaults: {list_size: 12}\ndeny: [10.0.0.3, {file: a.txt}, {file: b.txt}, 10.0.0.11]\n";
  Diagnostics diagnostics;
  FloodgateConfig config = loadConfig((dir.path() / "floodgate.yaml").string(), diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << diagnostics.format();
  ASSERT_TRUE(config.deny);
  ASSERT_EQ(config.deny->size(), 12u);
  EXPECT_EQ(config.deny->front().toString(), "10.0.0.3");
  EXPECT_EQ((*config.deny)[1].toString(), "10.0.0.0");
  EXPECT_EQ(config.deny->back().toString(), "10.0.0.11");

  // one more distinct prefix is past the bound, wherever the repeats are
  std::ofstream(dir.path() / "c.txt") << "10.0.0.12\n10.0.0.12\n";
  std::ofstream(dir.path() / "floodgate.yaml")
      << "defaults: {list_size: 12}\ndeny: [{file: a.txt}, {file: b.txt}, {file: c.txt}]\n";
  Diagnostics over;
  loadConfig((dir.path() / "floodgate.yaml").string(), over);
  EXPECT_EQ(over.format(), (dir.path() / "floodgate.yaml").string() +
                               ":2:1: deny holds more IPv4 prefixes than defaults.list_size (12): "
                               "raise it (up to 16777216) or merge prefixes into shorter ones\n");
}

// Repeats take no room and do not stop a file's read: one line repeated far past twice the
// bound is a list of one. A file whose every prefix the list holds already is no empty file
// (it holds CIDRs), so it is not refused as one.
TEST(ConfigParser, RepeatsNeitherStopAFileNorMakeItEmpty) {
  TempDir dir;
  {
    std::ofstream out(dir.path() / "same.txt");
    for (int i = 0; i < 1000; ++i) out << "192.0.2.1\n";
    out << "2001:db8::/32\n";
  }
  std::ofstream(dir.path() / "again.txt") << "192.0.2.1\n";
  std::ofstream(dir.path() / "floodgate.yaml")
      << "defaults: {list_size: 2}\nallow: [{file: same.txt}, {file: again.txt}]\n";
  Diagnostics diagnostics;
  FloodgateConfig config = loadConfig((dir.path() / "floodgate.yaml").string(), diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << diagnostics.format();
  ASSERT_TRUE(config.allow);
  ASSERT_EQ(config.allow->size(), 2u);
  EXPECT_EQ((*config.allow)[1].toString(), "2001:db8::/32") << "read to its end";
}

// Rules past the 32 the program holds are not read: each rule's match.src is bounded, so an
// alias over thousands of rules would otherwise stand for more prefixes than memory holds.
TEST(ConfigParser, RulesPastTheMostTheProgramHoldsAreNotRead) {
  std::string yaml = "rules:\n";
  for (int i = 0; i < 33; ++i) {
    yaml += "  - {name: r" + std::to_string(i) + ", limit: {pps: 10}}\n";
  }
  yaml += "  - {name: late, match: {src: [{file: /nonexistent/list.txt}]}, limit: {pps: 10}}\n";
  EXPECT_EQ(parseErrors(yaml),
            "test.yaml:34:5: too many rules: 34 given, the XDP program holds at most 32\n");
}

// Every rule's match.src shares one pair of tries of 262144 entries: a prefix two rules list
// takes one, and more distinct prefixes than that are an error at check, not at reload.
TEST(ConfigParser, SourceSetsLargerThanTheirTriesAreAnError) {
  TempDir dir;
  auto write = [&](const char* name, int first, int count) {
    std::ofstream out(dir.path() / name);
    for (int i = first; i < first + count; ++i) {
      out << "10." << (i >> 16) << "." << ((i >> 8) & 255) << "." << (i & 255) << "\n";
    }
  };
  write("a.txt", 0, 131072);
  write("b.txt", 131072, 131072);
  write("c.txt", 262144, 1);
  auto errors = [&](const std::string& b_files) {
    std::ofstream(dir.path() / "floodgate.yaml")
        << "rules:\n"
           "  - {name: a, match: {src: [{file: a.txt}]}, limit: {pps: 10}}\n"
           "  - {name: b, match: {src: [" +
               b_files + "]}, limit: {pps: 10}}\n";
    Diagnostics diagnostics;
    loadConfig((dir.path() / "floodgate.yaml").string(), diagnostics);
    return diagnostics.format();
  };
  EXPECT_EQ(errors("{file: b.txt}"), "") << "262144 distinct prefixes fit";
  EXPECT_EQ(errors("{file: a.txt}, {file: b.txt}"), "") << "a prefix both rules list is one";
  EXPECT_NE(errors("{file: b.txt}, {file: c.txt}")
                .find("floodgate.yaml:1:1: the rules' match.src sets hold 262145 distinct IPv4 "
                      "prefixes, more than the 262144 they can: merge them into shorter prefixes"),
            std::string::npos)
      << errors("{file: b.txt}, {file: c.txt}");
}

TEST(ConfigParser, ManyBadLinesInAFileAreCapped) {
  TempDir dir;
  {
    std::ofstream out(dir.path() / "junk.txt");
    for (int i = 0; i < 25; ++i) out << "junk" << i << "\n";
  }
  std::ofstream(dir.path() / "floodgate.yaml") << "deny:\n  - file: junk.txt\n";
  Diagnostics diagnostics;
  loadConfig((dir.path() / "floodgate.yaml").string(), diagnostics);
  ASSERT_EQ(diagnostics.size(), kMaxFileDiagnostics + 1);
  EXPECT_EQ(diagnostics.items().back().message, "5 more bad lines not shown");
  EXPECT_EQ(diagnostics.items().front().line, 1);
}

TEST(ConfigParser, HttpSectionIsHandedToTheHttpParser) {
  FloodgateConfig config = parseClean(R"(
rules:
  - {name: r, limit: {pps: 1k}}
http:
  trusted_proxies: [10.0.0.0/8]
  client_header: x-forwarded-for
  policies:
    - {name: per-ip, key: ip, algorithm: fixed_window, limit: 300, window_ms: 60000}
)");
  ASSERT_TRUE(config.http.has_value());
  ASSERT_EQ(config.http->policies.size(), 1u);
  EXPECT_EQ(config.http->policies[0].name, "per-ip");
}

TEST(ConfigParser, UnitsOfEveryKind) {
  FloodgateConfig config = parseClean(R"(
rules:
  - {name: a, limit: {pps: 250, bps: 100Mbit, burst: 1.5k, burst_bytes: 1MB}}
  - {name: b, limit: {pps: 2M, bps: 1.5Gbps, burst: 20000, burst_bytes: 1518}}
  - {name: c, limit: {pps: 1G, bps: 800kbit}, on_exceed: {ban: 1d}}
  - {name: d, algorithm: fixed_window, window: 2m, limit: {pps: 10}, on_exceed: {ban: 1s}}
  - {name: e, algorithm: fixed_window, window: 1h, limit: {pps: 1}}
)");
  ASSERT_EQ(config.rules.size(), 5u);
  EXPECT_EQ(config.rules[0].limit.pps, 250u);
  EXPECT_EQ(config.rules[0].limit.bits_per_s, 100000000u);
  EXPECT_EQ(config.rules[0].limit.burst, 1500u);
  EXPECT_EQ(config.rules[0].limit.burst_bytes, 1000000u);
  EXPECT_EQ(config.rules[1].limit.pps, 2000000u);
  EXPECT_EQ(config.rules[1].limit.bits_per_s, 1500000000u);
  EXPECT_EQ(config.rules[2].limit.pps, 1000000000u);
  EXPECT_EQ(config.rules[2].limit.bits_per_s, 800000u);
  EXPECT_EQ(config.rules[2].ban_ns, 86400000000000u);
  EXPECT_EQ(config.rules[3].window_ns, 120000000000u);
  EXPECT_EQ(config.rules[3].ban_ns, 1000000000u);
  EXPECT_EQ(config.rules[4].window_ns, 3600000000000u);
}

TEST(ConfigParser, UnreadableConfigIsOneLine) {
  Diagnostics diagnostics;
  loadConfig("/nonexistent/floodgate.yaml", diagnostics);
  EXPECT_EQ(
      diagnostics.format(),
      "/nonexistent/floodgate.yaml: cannot read the config file: No such file or directory\n");
  Result<FloodgateConfig> config = loadValidConfig("/nonexistent/floodgate.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "/nonexistent/floodgate.yaml: cannot read the config file: No such file or directory");
}

TEST(ConfigParser, AttachOptionsWithoutInterfacesUseAuto) {
  FloodgateConfig config = parseClean(R"(
defaults: {table_size: 1024, monitor: true, fragments: drop, link_control: {pps: 50}}
rules:
  - {name: a, limit: {pps: 1k}}
  - {name: b, limit: {pps: 2k}}
)");
  Result<AttachOptions> options = attachOptionsFor(config, "veth0");
  ASSERT_TRUE(options.ok()) << options.error().message;
  EXPECT_EQ(options->interface, "veth0");
  EXPECT_EQ(options->mode, XdpMode::kAuto);
  EXPECT_EQ(options->table_slots, 1024u);
  EXPECT_TRUE(options->monitor);
  EXPECT_EQ(options->fragments, FramePolicy::kDrop);
  EXPECT_EQ(options->link_control, (LinkControlBudget{50, 50}));
  ASSERT_EQ(options->rules.size(), 2u);
  EXPECT_EQ(options->rules[1].id, 1u);
  EXPECT_EQ(options->rules[1].name, "b");
  EXPECT_FALSE(options->allow.has_value());  // no allow: the interface's list is left alone
}

TEST(ConfigParser, NeighboursOfAnInterface) {
  FloodgateConfig config = parseClean(R"(
interfaces:
  - {name: eth0, next: {object: /usr/lib/xdp/lb.o, section: xdp}}
  - {name: eth1, next: {pinned: /sys/fs/bpf/lb}}
  - {name: eth2, next: none, into_prog_array: {path: /sys/fs/bpf/root_array, slot: 3}}
  - eth3
)");
  ASSERT_EQ(config.interfaces.size(), 4u);
  EXPECT_EQ(config.interfaces[0].next, (NextProgramSpec{"/usr/lib/xdp/lb.o", "xdp", ""}));
  EXPECT_EQ(config.interfaces[1].next, (NextProgramSpec{"", "", "/sys/fs/bpf/lb"}));
  ASSERT_TRUE(config.interfaces[2].next.has_value());
  EXPECT_TRUE(config.interfaces[2].next->none()) << "none empties the slot";
  EXPECT_FALSE(config.interfaces[3].next.has_value()) << "unset leaves the slot as it is";
  Result<AttachOptions> options = attachOptionsFor(config, "eth2");
  ASSERT_TRUE(options.ok()) << options.error().message;
  EXPECT_EQ(options->root_prog_array, "/sys/fs/bpf/root_array");
  EXPECT_EQ(options->root_slot, 3u);
  EXPECT_TRUE(options->next->none());
  EXPECT_EQ(attachOptionsFor(config, "eth3")->root_prog_array, "");
}

TEST(ConfigParser, NeighboursAreCheckedWithTheirPlace) {
  EXPECT_EQ(parseErrors("interfaces:\n  - {name: eth0, next: {object: lb.o}}\n"),
            "test.yaml:2:33: next.object must be an absolute path, not 'lb.o'\n");
  EXPECT_EQ(parseErrors("interfaces:\n  - {name: eth0, next: {object: /a.o, pinned: /b}}\n"),
            "test.yaml:2:24: next needs one of object (a BPF object file) and pinned (a pinned "
            "program)\n");
  EXPECT_EQ(parseErrors("interfaces:\n  - {name: eth0, next: {pinned: /b, section: xdp}}\n"),
            "test.yaml:2:46: next.section goes with next.object, not with next.pinned\n");
  EXPECT_EQ(parseErrors("interfaces:\n  - {name: eth0, next: lb.o}\n"),
            "test.yaml:2:24: next must be {object: PATH, section: NAME}, {pinned: PATH} or none, "
            "got 'lb.o'\n");
  EXPECT_EQ(parseErrors("interfaces:\n  - {name: eth0, into_prog_array: {path: /r}}\n"),
            "test.yaml:2:35: into_prog_array needs a path and a slot, e.g. {path: "
            "/sys/fs/bpf/root_array, slot: 1}\n");
  EXPECT_NE(parseErrors("interfaces:\n  - {name: eth0, mode: native, into_prog_array: {path: /r, "
                        "slot: 1}}\n")
                .find("into_prog_array runs floodgate where its root program runs: drop mode"),
            std::string::npos);
}

}  // namespace
}  // namespace floodgate::config
