// SPDX-License-Identifier: MIT
// End to end, a fleet of two: two `floodgate run`, each in its own network namespace
// guarding its own veth, share bans through a signed Redis stream (a redis-server in host
// A's namespace, reached by B over a link between the two). A ban an operator adds on A
// with `ban add --config` is applied by B with the same end and drops the source's packets
// there too; B restarted reads it back; a lift the operator publishes on A with `ban del
// --config` lifts it on B, and B restarted does not bring it back; a forged record and one
// naming B's own address, written straight into the stream, are refused and counted by B;
// an escalation A makes in monitor mode is not shared.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/command.h"
#include "e2e/child_process.h"
#include "e2e/netns_http.h"
#include "e2e/veth_network.h"
#include "floodgate_shared.h"
#include "kernel/unique_fd.h"
#include "udp_traffic/udp_traffic.h"

namespace floodgate::test {
namespace {

constexpr const char* kBanned = "198.18.0.2";
constexpr const char* kInnocent = "198.18.0.3";
constexpr const char* kLinkA = "10.77.0.1";  // A's end of the link between the two hosts
constexpr const char* kLinkB = "10.77.0.2";
constexpr int kRedisPort = 6391;
constexpr int kMetricsPort = 9477;

std::string nameOf(const std::string& netns_path) {
  return netns_path.substr(netns_path.rfind('/') + 1);
}

class FleetBansE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    if (runCommand({"redis-server", "--version"}).exit_code != 0) {
      GTEST_SKIP() << "redis-server is not installed";
    }
    for (auto* net : {&a_, &b_}) {
      auto made = VethNetwork::create({kBanned, kInnocent});
      ASSERT_TRUE(made.ok()) << made.error().message;
      *net = std::move(*made);
    }
    char dir[] = "/tmp/fg-fleet-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    linkHosts();
    startRedis();
    secret_ = dir_ + "/fleet.secret";
    std::ofstream(secret_) << "e2e-secret-of-the-fleet-0123456789\n";
    ASSERT_EQ(chmod(secret_.c_str(), 0600), 0);
    config_a_ = writeConfig("a", a_->targetInterface());
    config_b_ = writeConfig("b", b_->targetInterface());
  }

  void TearDown() override {
    for (ChildProcess* daemon : {&daemon_a_, &daemon_b_}) {
      if (daemon->running()) {
        daemon->signal(SIGTERM);  // detaches, so nothing stays pinned
        daemon->wait(10);
      }
    }
    redis_ = ChildProcess();
    if (!link_a_.empty())
      runCommand({"ip", "-n", nameOf(a_->targetNetns()), "link", "del", link_a_});
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  // A veth pair between the two target namespaces: the hosts' network to Redis.
  void linkHosts() {
    const std::string tag = std::to_string(getpid() % 100000);
    link_a_ = "fgla" + tag;
    const std::string link_b = "fglb" + tag;
    const std::string a = nameOf(a_->targetNetns()), b = nameOf(b_->targetNetns());
    for (const std::vector<std::string>& step : std::vector<std::vector<std::string>>{
             {"ip", "link", "add", link_a_, "netns", a, "type", "veth", "peer", "name", link_b,
              "netns", b},
             {"ip", "-n", a, "addr", "add", std::string(kLinkA) + "/24", "dev", link_a_},
             {"ip", "-n", b, "addr", "add", std::string(kLinkB) + "/24", "dev", link_b},
             {"ip", "-n", a, "link", "set", link_a_, "up"},
             {"ip", "-n", b, "link", "set", link_b, "up"}}) {
      CommandResult r = runCommand(step);
      ASSERT_EQ(r.exit_code, 0) << step[0] << " " << step[1] << " " << step[2] << ": " << r.err;
    }
  }

  void startRedis() {
    const std::string port = std::to_string(kRedisPort);
    auto redis = ChildProcess::start(
        {"nsenter", "--net=" + a_->targetNetns(), "redis-server", "--port", port, "--bind", kLinkA,
         // B connects from across the link, without a password
         "--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", dir_},
        dir_ + "/redis.log");
    ASSERT_TRUE(redis.ok()) << redis.error().message;
    redis_ = std::move(*redis);
    for (int i = 0; i < 100; ++i) {
      if (redisCli({"ping"}).out.find("PONG") != std::string::npos) return;
      usleep(50000);
    }
    FAIL() << "redis-server did not start in A's namespace:\n" << redis_.log();
  }

  CommandResult redisCli(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        "nsenter", "--net=" + a_->targetNetns(), "redis-cli", "-h", kLinkA,
        "-p",      std::to_string(kRedisPort)};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv);
  }

  // Waits (5 s at most) until the daemon's report socket is there: an ifstream cannot open
  // a socket, so it is looked at with lstat.
  static void waitForSocket(const std::string& path) {
    struct stat st {};
    for (int i = 0; i < 100; ++i) {
      if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return;
      usleep(50000);
    }
    ADD_FAILURE() << "no report socket at " << path;
  }

  // Sends a service's report of `address` to the report socket at `path`, as the library
  // sends it; whether it went.
  static bool reportOffender(const std::string& path, const std::string& address) {
    const UniqueFd fd(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un to{};
    to.sun_family = AF_UNIX;
    path.copy(to.sun_path, sizeof(to.sun_path) - 1);
    const std::string report = "offender " + address + " rejections=50 within_ms=1000";
    return sendto(fd.get(), report.data(), report.size(), 0, reinterpret_cast<sockaddr*>(&to),
                  sizeof(to)) == static_cast<ssize_t>(report.size());
  }

  // Host A's config with a service's policy and offender reports over `socket`; `more`:
  // further top-level sections; `escalate_more`: further keys of http.escalate.
  std::string escalatingConfigA(const std::string& socket, const std::string& more = "",
                                const std::string& escalate_more = "") {
    return writeConfig("a", a_->targetInterface(),
                       more +
                           "http:\n  policies:\n    - name: per-ip\n      key: ip\n"
                           "      algorithm: fixed_window\n      limit: 5\n      window_ms: 1000\n"
                           "  escalate: {rejections: 10, within: 10s, ban: 10m, socket: " +
                           socket + escalate_more + "}\n");
  }

  // Starts both hosts' daemons, A's with escalatingConfigA(`more`, `escalate_more`), and
  // waits for A's report socket; its path.
  std::string startWithEscalationOnA(const std::string& more = "",
                                     const std::string& escalate_more = "") {
    const std::string socket_path = dir_ + "/reports.sock";
    config_a_ = escalatingConfigA(socket_path, more, escalate_more);
    daemon_a_ = startDaemon(*a_, config_a_, "daemon-a.log");
    daemon_b_ = startDaemon(*b_, config_b_, "daemon-b.log");
    waitForSocket(socket_path);
    return socket_path;
  }

  // `more`: further top-level sections of the host's config; `more_bans`: of fleet.bans.
  std::string writeConfig(const std::string& host, const std::string& interface,
                          const std::string& more = "", const std::string& more_bans = "") {
    const std::string path = dir_ + "/floodgate-" + host + ".yaml";
    std::ofstream(path) << "interfaces: [" << interface << "]\n"
                        << more << "rules:\n  - name: per-source\n    limit: {pps: 100k}\n"
                        << "fleet:\n  bans:\n"
                        << "    address: " << kLinkA << ":" << kRedisPort << "\n"
                        << "    stream: fg:bans\n"
                        << "    secret_file: " << secret_ << "\n"
                        << "    max_ban: 1h\n"
                        << more_bans;
    return path;
  }

  ChildProcess startDaemon(VethNetwork& net, const std::string& config, const std::string& log,
                           const std::vector<std::string>& more = {}) {
    std::vector<std::string> argv = {
        "nsenter",          "--net=" + net.targetNetns(),
        FLOODGATE_BIN,      "run",
        "--config",         config,
        "--metrics-listen", "127.0.0.1:" + std::to_string(kMetricsPort)};
    argv.insert(argv.end(), more.begin(), more.end());
    auto daemon = ChildProcess::start(argv, dir_ + "/" + log);
    EXPECT_TRUE(daemon.ok()) << daemon.error().message;
    if (!daemon.ok()) return {};
    for (int i = 0; i < 200; ++i) {
      if (daemon->log().find("taking fleet bans from redis stream fg:bans") != std::string::npos) {
        return std::move(*daemon);
      }
      usleep(50000);
    }
    ADD_FAILURE() << "the daemon never followed the stream:\n" << daemon->log();
    return std::move(*daemon);
  }

  // The bans of `net`'s interface: address → {by, seconds_left}.
  std::map<std::string, std::pair<std::string, double>> bans(VethNetwork& net) {
    CommandResult list = net.floodgate({"ban", "list", net.targetInterface(), "--json"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    std::map<std::string, std::pair<std::string, double>> out;
    if (list.exit_code != 0) return out;
    const nlohmann::json listed = nlohmann::json::parse(list.out);  // outlives the loop
    for (const auto& ban : listed["bans"]) {
      const double left = ban["seconds_left"].is_null() ? -1.0 : ban["seconds_left"].get<double>();
      out[ban["cidr"].get<std::string>()] = {ban["by"].get<std::string>(), left};
    }
    return out;
  }

  // Waits until `net` holds a ban of `address`; its {by, seconds_left}.
  std::pair<std::string, double> waitForBan(VethNetwork& net, const std::string& address) {
    for (int i = 0; i < 100; ++i) {
      auto held = bans(net);
      if (held.contains(address)) return held[address];

      usleep(100000);
    }
    return {"", 0};
  }

  // Waits until `net` holds no ban of `address`; whether it came to that.
  bool waitForNoBan(VethNetwork& net, const std::string& address) {
    for (int i = 0; i < 100; ++i) {
      if (!bans(net).contains(address)) return true;
      usleep(100000);
    }
    return false;
  }

  std::string metricsOf(VethNetwork& net) {
    return httpGetIn(net.targetNetns(), kMetricsPort, "/metrics").body;
  }

  // Waits until `net`'s metrics hold `line`; the metrics last read.
  std::string waitForMetric(VethNetwork& net, const std::string& line) {
    std::string metrics;
    for (int i = 0; i < 100; ++i) {
      metrics = metricsOf(net);
      if (metrics.find(line) != std::string::npos) break;
      usleep(100000);
    }
    return metrics;
  }

  // Packets of `net`'s limiter dropped for a ban since it was attached.
  uint64_t banDrops(VethNetwork& net) {
    CommandResult r = net.floodgate({"stats", net.targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return 0;
    const nlohmann::json stats = nlohmann::json::parse(r.out);
    for (const auto& row : stats["counters"]) {
      if (row["verdict"] == "drop" && row["reason"] == "ban") return row["packets"];
    }
    return 0;
  }

  struct Sent {
    uint64_t sent = 0;     // datagrams sent
    uint64_t dropped = 0;  // ban drops of the limiter since it was attached, after them
  };

  // Sends UDP datagrams to the target of `net` from `source` on its sending side for a
  // second (as many as a busy machine lets through, up to 50), and counts ban drops once
  // they stop moving: the receiver may run a datagram well after the sender returned.
  Sent sendAndCountBanDrops(VethNetwork& net, const std::string& source) {
    auto sent =
        sendUdp({net.senderNetns(), source, VethNetwork::kTargetAddress, 9, 1.0, 50, 1, 18});
    EXPECT_TRUE(sent.ok()) << (sent.ok() ? "" : sent.error().message);
    Sent result{sent.ok() ? sent->sent : 0, banDrops(net)};
    for (int i = 0; i < 50; ++i) {
      usleep(100000);
      const uint64_t now = banDrops(net);
      if (now == result.dropped) break;
      result.dropped = now;
    }
    return result;
  }

  std::unique_ptr<VethNetwork> a_, b_;
  std::string dir_, secret_, config_a_, config_b_, link_a_;
  ChildProcess redis_, daemon_a_, daemon_b_;  // after the networks: gone before them
};

TEST_F(FleetBansE2eTest, ABanOnOneHostIsDroppedByTheOtherWithTheSameEnd) {
  daemon_a_ = startDaemon(*a_, config_a_, "daemon-a.log");
  daemon_b_ = startDaemon(*b_, config_b_, "daemon-b.log");
  ASSERT_EQ(sendAndCountBanDrops(*b_, kBanned).dropped, 0u) << "not banned yet";

  CommandResult added = a_->floodgate(
      {"ban", "add", a_->targetInterface(), kBanned, "--for", "10m", "--config", config_a_});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  EXPECT_NE(added.out.find("shared with the fleet through redis stream fg:bans"), std::string::npos)
      << added.out;

  auto [by, left_b] = waitForBan(*b_, kBanned);
  ASSERT_EQ(by, "fleet") << daemon_b_.log()
                         << b_->floodgate({"ban", "list", b_->targetInterface(), "--json"}).out;
  const double left_a = bans(*a_)[kBanned].second;
  EXPECT_GT(left_b, 560) << "10 minutes from the ban on A, less the time it took";
  EXPECT_LE(left_b, 600);
  EXPECT_LE(std::fabs(left_a - left_b), 2.0) << "the same end on both hosts";
  const Sent banned = sendAndCountBanDrops(*b_, kBanned);
  ASSERT_GT(banned.sent, 0u);
  EXPECT_EQ(banned.dropped, banned.sent) << "every one dropped by B's XDP program";
  EXPECT_EQ(sendAndCountBanDrops(*b_, kInnocent).dropped, banned.dropped)
      << "another source is not";
  const std::string log_b = daemon_b_.log();
  EXPECT_NE(log_b.find("event=fleet_ban source=198.18.0.2"), std::string::npos) << log_b;
  const std::string metrics_b = metricsOf(*b_);
  EXPECT_NE(metrics_b.find("floodgate_fleet_bans_received_total{result=\"applied\"} 1"),
            std::string::npos)
      << metrics_b;
  // B does not publish what it applied: the stream still holds the one record A added
  EXPECT_EQ(redisCli({"XLEN", "fg:bans"}).out, "1\n");

  // B restarted (its limiter detached, its bans gone) reads the ban back, same end
  daemon_b_.signal(SIGTERM);
  ASSERT_EQ(daemon_b_.wait(10), 0) << daemon_b_.log();
  daemon_b_ = startDaemon(*b_, config_b_, "daemon-b2.log");
  auto [by_again, left_again] = waitForBan(*b_, kBanned);
  EXPECT_EQ(by_again, "fleet") << daemon_b_.log();
  EXPECT_LE(std::fabs(bans(*a_)[kBanned].second - left_again), 2.0);
  const Sent again = sendAndCountBanDrops(*b_, kBanned);
  ASSERT_GT(again.sent, 0u);
  EXPECT_EQ(again.dropped, again.sent);
}

// Fleet bans hold at most fleet.bans.max_entries of a host's ban table: past it a shared
// ban is not made (counted no_room, logged), and the host's own bans still are.
TEST_F(FleetBansE2eTest, AFleetBanPastMaxEntriesIsNotMadeWhereTheHostsOwnBansStillAre) {
  config_b_ = writeConfig("b", b_->targetInterface(), "", "    max_entries: 1\n");
  daemon_a_ = startDaemon(*a_, config_a_, "daemon-a.log");
  daemon_b_ = startDaemon(*b_, config_b_, "daemon-b.log");
  for (const char* address : {"203.0.113.7", kBanned}) {
    CommandResult added = a_->floodgate(
        {"ban", "add", a_->targetInterface(), address, "--for", "10m", "--config", config_a_});
    ASSERT_EQ(added.exit_code, 0) << added.err;
  }
  const std::string no_room = "floodgate_fleet_bans_received_total{result=\"no_room\"} 1";
  const std::string metrics = waitForMetric(*b_, no_room);
  EXPECT_NE(metrics.find(no_room), std::string::npos) << metrics << daemon_b_.log();
  EXPECT_NE(metrics.find("floodgate_fleet_bans_received_total{result=\"applied\"} 1"),
            std::string::npos);
  EXPECT_EQ(waitForBan(*b_, "203.0.113.7").first, "fleet");
  EXPECT_FALSE(bans(*b_).contains(kBanned));
  EXPECT_EQ(sendAndCountBanDrops(*b_, kBanned).dropped, 0u);
  EXPECT_NE(daemon_b_.log().find("fleet.bans.max_entries"), std::string::npos) << daemon_b_.log();

  CommandResult own = b_->floodgate({"ban", "add", b_->targetInterface(), kBanned, "--for", "10m"});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  const Sent banned = sendAndCountBanDrops(*b_, kBanned);
  ASSERT_GT(banned.sent, 0u);
  EXPECT_EQ(banned.dropped, banned.sent) << "B's own ban is made";
}

// A host in monitor mode only counts what its bans would drop: an escalation it makes for
// a report on its socket stays on it, where the fleet's hosts would drop the source.
TEST_F(FleetBansE2eTest, AnEscalationOnAHostInMonitorModeIsNotShared) {
  const std::string socket_path = startWithEscalationOnA("defaults: {monitor: true}\n");

  ASSERT_TRUE(reportOffender(socket_path, kBanned)) << strerror(errno);
  auto [by, left] = waitForBan(*a_, kBanned);
  ASSERT_EQ(by, "escalation") << daemon_a_.log();
  EXPECT_EQ(redisCli({"XLEN", "fg:bans"}).out, "0\n") << "nothing published";

  // a ban A's operator shares goes through the same stream, in order: once B applied it,
  // B has read everything A published before it
  CommandResult added = a_->floodgate(
      {"ban", "add", a_->targetInterface(), kInnocent, "--for", "10m", "--config", config_a_});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  ASSERT_EQ(waitForBan(*b_, kInnocent).first, "fleet") << daemon_b_.log();
  EXPECT_FALSE(bans(*b_).contains(kBanned)) << daemon_b_.log();
  EXPECT_EQ(redisCli({"XLEN", "fg:bans"}).out, "1\n");
}

// An address the host's operator allow-listed by hand (`floodgate allow add`, no `allow:` in
// the config) is trusted here: a report of it bans nothing and shares nothing, where the
// fleet's hosts would drop what this host lets through.
TEST_F(FleetBansE2eTest, AReportOfAnAddressAllowListedByHandIsNeitherBannedNorShared) {
  const std::string socket_path = startWithEscalationOnA();
  CommandResult allowed = a_->floodgate({"allow", "add", a_->targetInterface(), kBanned});
  ASSERT_EQ(allowed.exit_code, 0) << allowed.err;

  for (const char* address : {kBanned, kInnocent}) {
    ASSERT_TRUE(reportOffender(socket_path, address)) << strerror(errno);
  }
  // the reports are read in order: once the second one's ban reached B, the first was decided
  ASSERT_EQ(waitForBan(*b_, kInnocent).first, "fleet") << daemon_a_.log() << daemon_b_.log();
  EXPECT_FALSE(bans(*a_).contains(kBanned)) << daemon_a_.log();
  EXPECT_FALSE(bans(*b_).contains(kBanned)) << daemon_b_.log();
  EXPECT_EQ(redisCli({"XLEN", "fg:bans"}).out, "1\n") << "only the second report's ban shared";
}

// Finding a report's client on a hand-made allow list reads the list (all of it, for a
// prefix): each such report costs the reporter one ban of its quota, so a reporter naming an
// allow-listed client over and over cannot keep the daemon reading, and it runs out of bans
// as it would banning.
TEST_F(FleetBansE2eTest, AReportOfAnAllowListedAddressCostsTheReporterItsQuota) {
  const std::string socket_path = startWithEscalationOnA("", ", max_bans_per_minute: 2");
  CommandResult allowed = a_->floodgate({"allow", "add", a_->targetInterface(), kBanned});
  ASSERT_EQ(allowed.exit_code, 0) << allowed.err;

  for (const char* address : {kBanned, kBanned, kBanned, kInnocent}) {
    ASSERT_TRUE(reportOffender(socket_path, address)) << strerror(errno);
  }
  const std::string limited = "floodgate_http_escalations_total{result=\"rate_limited\"} 2";
  const std::string metrics = waitForMetric(*a_, limited);
  EXPECT_NE(metrics.find(limited), std::string::npos) << metrics << daemon_a_.log();
  EXPECT_NE(metrics.find("floodgate_http_escalations_total{result=\"allowlisted\"} 2"),
            std::string::npos)
      << metrics;
  EXPECT_FALSE(bans(*a_).contains(kInnocent)) << "the reporter's quota was spent";
  EXPECT_FALSE(bans(*a_).contains(kBanned));
}

// A service on a dual-stack socket sees an IPv4 client as ::ffff:a.b.c.d and may report it
// so: the ban is of the IPv4 address its packets carry, here and across the fleet.
TEST_F(FleetBansE2eTest, AReportOfAnIpv4MappedAddressBansTheIpv4Source) {
  const std::string socket_path = startWithEscalationOnA();
  ASSERT_TRUE(reportOffender(socket_path, std::string("::ffff:") + kBanned)) << strerror(errno);
  ASSERT_EQ(waitForBan(*b_, kBanned).first, "fleet") << daemon_a_.log() << daemon_b_.log();
  EXPECT_TRUE(bans(*a_).contains(kBanned)) << daemon_a_.log();
  EXPECT_GT(sendAndCountBanDrops(*b_, kBanned).dropped, 0u) << "its packets dropped";
}

// A lift ends what escalation remembers of the ban too: the source's next offence bans it
// again, on the host whose operator lifted it as well, where the command lifted the ban
// before the daemon read the lift.
TEST_F(FleetBansE2eTest, AnEscalatedBanLiftedByTheFleetIsMadeAgainAtTheNextReport) {
  const std::string socket_path = startWithEscalationOnA();
  // A's ban may show as the fleet's once A has read its own record back: the count says
  // what escalation did
  const std::string banned = "floodgate_http_escalations_total{result=\"banned\"} ";
  ASSERT_TRUE(reportOffender(socket_path, kBanned)) << strerror(errno);
  EXPECT_NE(waitForMetric(*a_, banned + "1").find(banned + "1"), std::string::npos);
  ASSERT_EQ(waitForBan(*b_, kBanned).first, "fleet") << daemon_b_.log();

  CommandResult lifted =
      a_->floodgate({"ban", "del", a_->targetInterface(), kBanned, "--config", config_a_});
  ASSERT_EQ(lifted.exit_code, 0) << lifted.err;
  // A's daemon has read its own lift
  const std::string lift = "floodgate_fleet_bans_received_total{result=\"lifted\"} 1";
  ASSERT_NE(waitForMetric(*a_, lift).find(lift), std::string::npos) << daemon_a_.log();
  ASSERT_TRUE(waitForNoBan(*a_, kBanned)) << daemon_a_.log();
  ASSERT_TRUE(waitForNoBan(*b_, kBanned)) << daemon_b_.log();

  ASSERT_TRUE(reportOffender(socket_path, kBanned)) << strerror(errno);
  EXPECT_NE(waitForMetric(*a_, banned + "2").find(banned + "2"), std::string::npos)
      << "taken for a repeat of the lifted ban:\n"
      << daemon_a_.log();
  EXPECT_NE(waitForBan(*a_, kBanned).first, "") << daemon_a_.log();
  EXPECT_EQ(waitForBan(*b_, kBanned).first, "fleet") << daemon_b_.log();
}

// A ban every host of the config refuses (wider than widest_ipv4, loopback) is refused before
// anything is banned or published, as a lift of it is: `ban add` does not say it was shared.
TEST_F(FleetBansE2eTest, ABanEveryHostRefusesIsNeitherMadeNorPublished) {
  daemon_a_ = startDaemon(*a_, config_a_, "daemon-a.log");
  for (auto [refused, why] :
       {std::pair{"198.18.0.0/16", "too_wide"}, std::pair{"127.0.0.1", "loopback"}}) {
    CommandResult added = a_->floodgate({"ban", "add", a_->targetInterface(), kBanned, refused,
                                         "--for", "10m", "--config", config_a_});
    EXPECT_EQ(added.exit_code, 2) << added.out << added.err;
    EXPECT_NE(added.err.find(std::string("a ban of ") + refused +
                             " is not shared: every host refuses it (" + why + ")"),
              std::string::npos)
        << added.err;
    EXPECT_EQ(added.out.find("shared with the fleet"), std::string::npos) << added.out;
  }
  EXPECT_TRUE(bans(*a_).empty()) << "nothing banned, not even the address before it";
  EXPECT_EQ(redisCli({"XLEN", "fg:bans"}).out, "0\n") << "nothing published";

  // what only hosts of this config refuse (its Redis server) is shared, with a warning:
  // another host's config may not refuse it
  CommandResult service = a_->floodgate(
      {"ban", "add", a_->targetInterface(), kLinkA, "--for", "10m", "--config", config_a_});
  EXPECT_EQ(service.exit_code, 0) << service.err;
  EXPECT_NE(service.err.find("warning: hosts running " + config_a_ + " do not apply the ban of " +
                             kLinkA + " (service)"),
            std::string::npos)
      << service.err;
  EXPECT_EQ(redisCli({"XLEN", "fg:bans"}).out, "1\n") << "published";
}

// A ban that fails halfway through a list (here the IPv4 ban table, pinned again with room
// for one entry, is full at the second) leaves the bans made before it banned, and shares
// them: the command exits 1 saying how many were banned.
TEST_F(FleetBansE2eTest, TheBansMadeBeforeAFailingOneAreSharedAndTheFailureSaysHowMany) {
  daemon_a_ = startDaemon(*a_, config_a_, "daemon-a.log");
  const std::string pin = "/sys/fs/bpf/floodgate/" + a_->targetInterface() + "/bans_v4";
  ASSERT_EQ(unlink(pin.c_str()), 0) << std::strerror(errno);
  LIBBPF_OPTS(bpf_map_create_opts, options, .map_flags = BPF_F_NO_PREALLOC);
  UniqueFd small(bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "bans_v4", sizeof(fg_lpm_v4), sizeof(fg_ban),
                                1, &options));
  ASSERT_TRUE(small.valid()) << std::strerror(errno);
  ASSERT_EQ(bpf_obj_pin(small.get(), pin.c_str()), 0) << std::strerror(errno);

  CommandResult added = a_->floodgate({"ban", "add", a_->targetInterface(), kBanned, kInnocent,
                                       "--for", "10m", "--config", config_a_});
  EXPECT_EQ(added.exit_code, 1) << added.out << added.err;
  EXPECT_NE(added.err.find("(1 of 2 banned before it, and shared)"), std::string::npos)
      << added.err;
  EXPECT_NE(added.out.find(std::string("banned ") + kBanned), std::string::npos) << added.out;
  EXPECT_NE(added.out.find("shared with the fleet through redis stream fg:bans"), std::string::npos)
      << added.out;
  EXPECT_EQ(redisCli({"XLEN", "fg:bans"}).out, "1\n") << "the ban made was published";
}

TEST_F(FleetBansE2eTest, ALiftOnOneHostLiftsTheBanEverywhereAndARestartKeepsItLifted) {
  daemon_a_ = startDaemon(*a_, config_a_, "daemon-a.log");
  daemon_b_ = startDaemon(*b_, config_b_, "daemon-b.log");
  CommandResult added = a_->floodgate(
      {"ban", "add", a_->targetInterface(), kBanned, "--for", "10m", "--config", config_a_});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  ASSERT_EQ(waitForBan(*b_, kBanned).first, "fleet") << daemon_b_.log();

  // a lift wider than any fleet ban: refused before anything is lifted, here or there (A
  // holds a ban of that /16 of its own, which must still stand)
  CommandResult local =
      a_->floodgate({"ban", "add", a_->targetInterface(), "198.18.0.0/16", "--for", "10m"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  CommandResult wide =
      a_->floodgate({"ban", "del", a_->targetInterface(), "198.18.0.0/16", "--config", config_a_});
  EXPECT_EQ(wide.exit_code, 2) << wide.out << wide.err;
  EXPECT_NE(wide.err.find("no fleet ban is wider than fleet.bans.widest_ipv4 (/24)"),
            std::string::npos)
      << wide.err;
  EXPECT_TRUE(bans(*a_).contains("198.18.0.0/16")) << "nothing lifted";
  EXPECT_EQ(redisCli({"XLEN", "fg:bans"}).out, "1\n") << "nothing published";
  CommandResult unban_local = a_->floodgate({"ban", "del", a_->targetInterface(), "198.18.0.0/16"});
  ASSERT_EQ(unban_local.exit_code, 0) << unban_local.err;

  CommandResult lifted =
      a_->floodgate({"ban", "del", a_->targetInterface(), kBanned, "--config", config_a_});
  ASSERT_EQ(lifted.exit_code, 0) << lifted.err;
  EXPECT_NE(lifted.out.find(std::string("unbanned ") + kBanned), std::string::npos) << lifted.out;
  EXPECT_NE(lifted.out.find("lift shared with the fleet through redis stream fg:bans"),
            std::string::npos)
      << lifted.out;
  ASSERT_TRUE(waitForNoBan(*b_, kBanned)) << daemon_b_.log();
  EXPECT_TRUE(bans(*a_).empty());
  EXPECT_EQ(sendAndCountBanDrops(*b_, kBanned).dropped, 0u) << "B lets the source through";
  const std::string metrics_b =
      waitForMetric(*b_, "floodgate_fleet_bans_received_total{result=\"lifted\"} 1");
  EXPECT_NE(metrics_b.find("floodgate_fleet_bans_received_total{result=\"lifted\"} 1"),
            std::string::npos)
      << metrics_b;
  EXPECT_NE(daemon_b_.log().find("event=fleet_lift source=198.18.0.2 lifted_on=1"),
            std::string::npos)
      << daemon_b_.log();

  // B restarted reads the ban back, older than the lift: not applied
  daemon_b_.signal(SIGTERM);
  ASSERT_EQ(daemon_b_.wait(10), 0) << daemon_b_.log();
  daemon_b_ = startDaemon(*b_, config_b_, "daemon-b2.log");
  const std::string again_b =
      waitForMetric(*b_, "floodgate_fleet_bans_received_total{result=\"superseded\"} 1");
  EXPECT_NE(again_b.find("floodgate_fleet_bans_received_total{result=\"superseded\"} 1"),
            std::string::npos)
      << again_b << daemon_b_.log();
  EXPECT_NE(again_b.find("floodgate_fleet_bans_received_total{result=\"applied\"} 0"),
            std::string::npos);
  EXPECT_TRUE(bans(*b_).empty());
  EXPECT_EQ(sendAndCountBanDrops(*b_, kBanned).dropped, 0u);

  // banned again after the lift: every host bans again
  CommandResult again = a_->floodgate(
      {"ban", "add", a_->targetInterface(), kBanned, "--for", "10m", "--config", config_a_});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(waitForBan(*b_, kBanned).first, "fleet") << daemon_b_.log();

  // Redis gone: the lift stands here, and the command says it was not shared
  redis_ = ChildProcess();
  CommandResult unshared =
      a_->floodgate({"ban", "del", a_->targetInterface(), kBanned, "--config", config_a_});
  EXPECT_EQ(unshared.exit_code, 1) << unshared.out << unshared.err;
  EXPECT_NE(unshared.err.find("1 of 1 lifts did not reach redis stream fg:bans"), std::string::npos)
      << unshared.err;
  EXPECT_FALSE(bans(*a_).contains(kBanned));
}

TEST_F(FleetBansE2eTest, AHostThatMissedALiftLiftsTheBanItStillHoldsButNotOneMadeSince) {
  daemon_a_ = startDaemon(*a_, config_a_, "daemon-a.log");
  daemon_b_ = startDaemon(*b_, config_b_, "daemon-b.log", {"--keep-attached"});
  CommandResult added = a_->floodgate({"ban", "add", a_->targetInterface(), kBanned, kInnocent,
                                       "--for", "10m", "--config", config_a_});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  ASSERT_EQ(waitForBan(*b_, kBanned).first, "fleet") << daemon_b_.log();
  ASSERT_EQ(waitForBan(*b_, kInnocent).first, "fleet") << daemon_b_.log();
  // B's daemon stops, its limiter still attached and holding both bans
  daemon_b_.signal(SIGTERM);
  ASSERT_EQ(daemon_b_.wait(10), 0) << daemon_b_.log();
  ASSERT_EQ(bans(*b_).size(), 2u);

  CommandResult lifted = a_->floodgate(
      {"ban", "del", a_->targetInterface(), kBanned, kInnocent, "--config", config_a_});
  ASSERT_EQ(lifted.exit_code, 0) << lifted.err;
  // B's operator bans one of them again, by hand, on B alone, after the lift
  sleep(1);
  CommandResult own =
      b_->floodgate({"ban", "add", b_->targetInterface(), kInnocent, "--for", "5m"});
  ASSERT_EQ(own.exit_code, 0) << own.err;

  daemon_b_ = startDaemon(*b_, config_b_, "daemon-b2.log");
  const std::string metrics =
      waitForMetric(*b_, "floodgate_fleet_bans_received_total{result=\"superseded\"} 2");
  EXPECT_NE(metrics.find("floodgate_fleet_bans_received_total{result=\"lifted\"} 2"),
            std::string::npos)
      << metrics << daemon_b_.log();
  EXPECT_NE(metrics.find("floodgate_fleet_bans_received_total{result=\"superseded\"} 2"),
            std::string::npos)
      << "both bans, older than their lifts";
  ASSERT_TRUE(waitForNoBan(*b_, kBanned)) << "the fleet's ban B held is lifted\n"
                                          << daemon_b_.log();
  auto held = bans(*b_);
  ASSERT_TRUE(held.contains(kInnocent)) << "the ban B's operator made after the lift stands\n"
                                        << daemon_b_.log();
  EXPECT_EQ(held[kInnocent].first, "manual");
  EXPECT_NE(daemon_b_.log().find("event=fleet_lift source=198.18.0.2 lifted_on=1"),
            std::string::npos);
  EXPECT_NE(daemon_b_.log().find("event=fleet_lift source=198.18.0.3 lifted_on=0"),
            std::string::npos);
}

TEST_F(FleetBansE2eTest, AForgedRecordAndOneNamingTheHostItselfAreRefusedAndCounted) {
  daemon_a_ = startDaemon(*a_, config_a_, "daemon-a.log");
  daemon_b_ = startDaemon(*b_, config_b_, "daemon-b.log");
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  const std::string expires = std::to_string(now_ms + 600'000);
  // signed with a secret that is not the fleet's: any 64 hex digits will do
  CommandResult forged = redisCli(
      {"XADD", "fg:bans", "*", "report",
       std::string("ban v1 ") + kInnocent + " expires_ms=" + expires + " kind=manual nonce=ab",
       "reporter", "intruder:1", "time_ms", std::to_string(now_ms), "mac", std::string(64, 'a')});
  ASSERT_EQ(forged.exit_code, 0) << forged.err;
  // a real ban, shared by A's operator, of B's own address on the hosts' link
  CommandResult own = a_->floodgate(
      {"ban", "add", a_->targetInterface(), kLinkB, "--for", "10m", "--config", config_a_});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  std::string metrics;
  for (int i = 0; i < 100; ++i) {
    metrics = metricsOf(*b_);
    if (metrics.find("floodgate_fleet_bans_received_total{result=\"own_address\"} 1") !=
        std::string::npos) {
      break;
    }
    usleep(100000);
  }
  EXPECT_NE(metrics.find("floodgate_fleet_bans_received_total{result=\"forged\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("floodgate_fleet_bans_received_total{result=\"own_address\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("floodgate_fleet_bans_received_total{result=\"applied\"} 0"),
            std::string::npos);
  EXPECT_TRUE(bans(*b_).empty());
  EXPECT_EQ(sendAndCountBanDrops(*b_, kInnocent).dropped, 0u);
  const std::string log = daemon_b_.log();
  EXPECT_NE(log.find("event=fleet_ban_refused result=forged"), std::string::npos) << log;
}

}  // namespace
}  // namespace floodgate::test
