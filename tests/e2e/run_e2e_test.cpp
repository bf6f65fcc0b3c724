// SPDX-License-Identifier: MIT
// End to end, `floodgate run`: started in the veth network's target namespace, it attaches the
// config's interface, counts a flood that /metrics shows, promtool accepts and a real
// prometheus reads back; reloads on SIGHUP and on an edited file (an invalid one changes
// nothing and is counted); detaches on SIGTERM, or with --keep-attached leaves the limiter
// to a second run that adopts it with its counters; a listed interface that does not exist
// is reported unhealthy and attached once it appears, without a restart; a metrics port
// another program holds fails the start before anything is attached.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "e2e/child_process.h"
#include "e2e/netns_http.h"
#include "e2e/veth_network.h"
#include "http/socket_probe.h"
#include "kernel/unique_fd.h"
#include "kernel/xdp_neighbour.h"
#include "udp_traffic/udp_traffic.h"

namespace floodgate::test {
namespace {

constexpr const char* kFlooder = "198.18.0.2";
constexpr uint16_t kPort = 9999;
// The target namespace is the test's own: any port there is free.
constexpr int kMetricsPort = 9477;
constexpr int kPrometheusPort = 9090;

bool haveProgram(const std::string& name) {
  return runCommand({"sh", "-c", "command -v " + name}).exit_code == 0;
}

// The value of the sample whose name and labels are exactly `series`, or -1.
double sampleValue(const std::string& exposition, const std::string& series) {
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return -1;
}

// The CPU time, user and system, process `pid` has used so far (its /proc stat, in ticks).
double cpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));  // past the command's name
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// How many lines of `log` contain `needle`.
size_t linesWith(const std::string& log, const std::string& needle) {
  size_t count = 0;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) count += line.find(needle) != std::string::npos;
  return count;
}

// Removes what a limiter left pinned under an interface's name when a test ends: the
// second interfaces tests make go with their namespace, their pins would not.
struct PinsGone {
  std::string name;
  ~PinsGone() {
    std::error_code ec;
    std::filesystem::remove_all("/sys/fs/bpf/floodgate/" + name, ec);
  }
};

class RunE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    for (const char* tool : {"nsenter", "promtool", "prometheus"}) {
      if (!haveProgram(tool))
        GTEST_SKIP() << tool << " is not installed (Debian: util-linux, prometheus)";
    }
    auto net = VethNetwork::create({kFlooder});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
    char dir[] = "/tmp/fg-run-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    config_ = dir_ + "/floodgate.yaml";
    writeConfig(config_, 100, 10);
  }
  void TearDown() override {
    prometheus_ = ChildProcess();
    daemon_ = ChildProcess();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  void writeConfig(const std::string& path, uint64_t pps, uint64_t burst) {
    std::ofstream(path) << "interfaces:\n  - name: " << net_->targetInterface() << interface_keys_
                        << "\nrules:\n  - name: per-source\n    match: {protocol: udp}\n"
                        << "    limit: {pps: " << pps << ", burst: " << burst << "}\n";
  }
  // Replaces the config the way editors do: a new file renamed over the old one.
  void renameOver(uint64_t pps, uint64_t burst) {
    writeConfig(dir_ + "/.floodgate.yaml.new", pps, burst);
    ASSERT_EQ(std::rename((dir_ + "/.floodgate.yaml.new").c_str(), config_.c_str()), 0);
  }

  // Starts `floodgate run` in the target namespace and waits until /healthz answers
  // `healthz_status` (200: ok).
  void startDaemon(const std::vector<std::string>& extra = {}, int healthz_status = 200) {
    std::vector<std::string> argv = {
        "nsenter",          "--net=" + net_->targetNetns(),
        FLOODGATE_BIN,      "run",
        "--config",         config_,
        "--metrics-listen", "127.0.0.1:" + std::to_string(kMetricsPort)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto child = ChildProcess::start(argv, dir_ + "/daemon-" + std::to_string(++starts_) + ".log");
    ASSERT_TRUE(child.ok()) << child.error().message;
    daemon_ = std::move(*child);
    for (int i = 0; i < 100; ++i) {
      if (httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status == healthz_status) {
        return;
      }
      usleep(50000);
    }
    FAIL() << "floodgate run's /healthz never answered " << healthz_status << ":\n"
           << daemon_.log();
  }

  std::string scrape() {
    HttpReply reply = httpGetIn(net_->targetNetns(), kMetricsPort, "/metrics");
    EXPECT_EQ(reply.status, 200) << daemon_.log();
    EXPECT_EQ(reply.content_type.rfind("text/plain; version=0.0.4", 0), 0u) << reply.content_type;
    return reply.body;
  }
  double metric(const std::string& series) { return sampleValue(scrape(), series); }
  std::string packets(const char* verdict, const char* reason) {
    return "floodgate_packets_total{interface=\"" + net_->targetInterface() + "\",verdict=\"" +
           verdict + "\",reason=\"" + reason + "\"}";
  }

  // Polls `series` until `done(value)` or `seconds` pass; the last value seen (-1: none
  // answered). A scrape may go unanswered while the daemon loads a program for an attach
  // (the verifier can take seconds on a busy machine): the poll goes on.
  template <class Done>
  double waitFor(const std::string& series, Done done, double seconds = 5) {
    double value = -1;
    for (int i = 0; i < static_cast<int>(seconds * 20); ++i) {
      HttpReply reply = httpGetIn(net_->targetNetns(), kMetricsPort, "/metrics");
      if (reply.status == 200) {
        value = sampleValue(reply.body, series);
        if (done(value)) break;
      }
      usleep(50000);
    }
    return value;
  }

  // Replaces the config with `text` as an editor does, which the daemon then reloads.
  void reloadTo(const std::string& text) {
    std::ofstream(dir_ + "/.new.yaml") << text;
    ASSERT_EQ(std::rename((dir_ + "/.new.yaml").c_str(), config_.c_str()), 0);
  }
  // A config of one per-source rule of `pps` on each of `names`.
  static std::string configOf(const std::vector<std::string>& names, uint64_t pps) {
    std::string text = "interfaces:\n";
    for (const std::string& name : names) text += "  - name: " + name + "\n";
    return text + "rules:\n  - name: per-source\n    limit: {pps: " + std::to_string(pps) +
           ", burst: 10}\n";
  }
  // The pps of the first rule the limiter of `name` runs; -1 when none is attached.
  int rulePps(const std::string& name) {
    CommandResult status = net_->floodgate({"status", name, "--json"});
    if (status.exit_code != 0) return -1;
    return nlohmann::json::parse(status.out)["interfaces"][0]["rules"][0]["limit"]["pps"];
  }
  // Takes the writer lock of the limiter of `name` as another command would (released when
  // the returned descriptor closes).
  static UniqueFd holdWriterLock(const std::string& name) {
    const std::string pins = "/sys/fs/bpf/floodgate/" + name;
    UniqueFd lock(open(pins.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    EXPECT_TRUE(lock.valid()) << pins << ": " << strerror(errno);
    if (lock.valid()) {
      EXPECT_EQ(flock(lock.get(), LOCK_EX), 0) << strerror(errno);
    }
    return lock;
  }
  // Waits for the daemon to count a failed reload and then log it (the line may come a
  // moment after the count).
  void waitForFailedReload(const std::string& logged) {
    EXPECT_EQ(waitFor(
                  "floodgate_config_reloads_total{result=\"failure\"}",
                  [](double v) { return v >= 1; }, 30),
              1)
        << daemon_.log();
    for (int i = 0; i < 100 && linesWith(daemon_.log(), logged) == 0; ++i) usleep(50000);
  }

  // Reloads to `text` while another command holds the writer lock of the limiter of `locked`:
  // the reload is refused before it changes any interface, not even for a moment.
  void expectReloadRefusedWhileLocked(const std::string& locked, const std::string& text) {
    {
      UniqueFd lock = holdWriterLock(locked);
      reloadTo(text);
      waitForFailedReload("(no interface was changed)");
    }
    EXPECT_EQ(linesWith(daemon_.log(), "(no interface was changed)"), 1u) << daemon_.log();
    EXPECT_EQ(linesWith(daemon_.log(), "put back"), 0u) << daemon_.log();
    EXPECT_EQ(linesWith(daemon_.log(), "reloaded " + net_->targetInterface()), 0u)
        << "not changed, not even for a moment\n"
        << daemon_.log();
  }

  // Takes the lock `floodgate attach` and the daemon's attaches wait for (released when the
  // returned descriptor closes, however the test ends).
  static UniqueFd holdAttachLock() {
    std::filesystem::create_directories("/run/floodgate");
    UniqueFd fd(open("/run/floodgate/attach.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    EXPECT_TRUE(fd.valid());
    if (fd.valid()) {
      EXPECT_EQ(flock(fd.get(), LOCK_EX), 0);
    }
    return fd;
  }

  // Whether, within 20 s, the daemon came to have the attach lock's file open for 1.5 s on
  // end: an attach or detach of it waits for the lock (held here) with the file open, where
  // its once-a-second look at its limiters only tries the lock and closes the file at once.
  bool daemonWaitsForAttachLock() {
    const std::string dir = "/proc/" + std::to_string(daemon_.pid()) + "/fd";
    bool was_open = false;
    auto open_since = std::chrono::steady_clock::now();
    for (int i = 0; i < 430; ++i) {
      bool open_now = false;
      std::error_code ec;
      for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end;
           it.increment(ec)) {
        std::error_code link_ec;
        open_now |=
            std::filesystem::read_symlink(it->path(), link_ec) == "/run/floodgate/attach.lock";
      }
      const auto now = std::chrono::steady_clock::now();
      if (open_now && !was_open) open_since = now;
      if (open_now && now - open_since >= std::chrono::milliseconds(1500)) return true;
      was_open = open_now;
      usleep(50000);
    }
    return false;
  }

  uint64_t flood(double seconds, uint64_t rate) {
    auto sent = sendUdp(
        {net_->senderNetns(), kFlooder, VethNetwork::kTargetAddress, kPort, seconds, rate, 1, 18});
    EXPECT_TRUE(sent.ok()) << (sent.ok() ? "" : sent.error().message);
    usleep(100000);
    return sent.ok() ? sent->sent : 0;
  }

  bool attached() { return net_->floodgate({"stats", net_->targetInterface()}).exit_code == 0; }

  // Another program's socket listening on 127.0.0.1:kMetricsPort in the target namespace
  // (invalid if it cannot be had).
  UniqueFd squatMetricsPort() {
    UniqueFd squatter;
    std::thread in_target([&] {  // a socket stays in the namespace it was made in
      int fd = open(net_->targetNetns().c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) return;
      close(fd);
      squatter = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(kMetricsPort);
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      int on = 1;  // past the scrapes' connections in TIME_WAIT
      setsockopt(squatter.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
      if (bind(squatter.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
          listen(squatter.get(), 1) != 0) {
        squatter.reset();
      }
    });
    in_target.join();
    return squatter;
  }

  std::unique_ptr<VethNetwork> net_;
  std::string dir_, config_;
  std::string interface_keys_;  // more keys of the interface's entry, each "\n    key: value"
  int starts_ = 0;
  // Declared after net_: destroyed first, so every child is gone before the namespaces.
  ChildProcess daemon_, prometheus_;
};

TEST_F(RunE2eTest, AFloodShowsInMetricsThatPromtoolAcceptsAndPrometheusReadsBack) {
  startDaemon();
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").body, "ok\n");
  flood(0.5, 5000);
  std::string text = scrape();
  double dropped = sampleValue(text, packets("drop", "rate"));
  EXPECT_GT(dropped, 1000) << text;
  EXPECT_EQ(
      sampleValue(text, "floodgate_rule_packets_total{interface=\"" + net_->targetInterface() +
                            "\",rule=\"per-source\",verdict=\"drop\"}"),
      dropped);
  EXPECT_EQ(sampleValue(text, "floodgate_config_generation"), 1);
  EXPECT_EQ(sampleValue(text, packets("monitor", "fragment")), 0) << "every series, zeros too";
  EXPECT_GE(sampleValue(text, "floodgate_tracked_sources{interface=\"" + net_->targetInterface() +
                                  "\",family=\"ipv4\"}"),
            0);

  std::ofstream(dir_ + "/scrape.txt") << text;
  CommandResult check =
      runCommand({"sh", "-c", "promtool check metrics < " + dir_ + "/scrape.txt"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;

  std::ofstream(dir_ + "/prometheus.yml")
      << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      << "scrape_configs:\n  - job_name: floodgate\n    static_configs:\n"
      << "      - targets: ['127.0.0.1:" << kMetricsPort << "']\n";
  auto prometheus = ChildProcess::start(
      {"nsenter", "--net=" + net_->targetNetns(), "prometheus",
       "--config.file=" + dir_ + "/prometheus.yml", "--storage.tsdb.path=" + dir_ + "/tsdb",
       "--web.listen-address=127.0.0.1:" + std::to_string(kPrometheusPort)},
      dir_ + "/prometheus.log");
  ASSERT_TRUE(prometheus.ok()) << prometheus.error().message;
  prometheus_ = std::move(*prometheus);
  std::string query = "/api/v1/query?query=" +
                      urlEncode("floodgate_packets_total{verdict=\"drop\",reason=\"rate\"}");
  double seen = -1;
  std::string last;
  for (int i = 0; i < 60 && seen < dropped; ++i) {  // 30 s at most
    HttpReply reply = httpGetIn(net_->targetNetns(), kPrometheusPort, query);
    last = reply.body;
    if (reply.status == 200) {
      auto json = nlohmann::json::parse(reply.body, nullptr, false);
      if (!json.is_discarded() && json["status"] == "success") {
        for (const auto& r : json["data"]["result"]) {
          if (r["metric"]["interface"] == net_->targetInterface()) {
            seen = std::stod(r["value"][1].get<std::string>());
          }
        }
      }
    }
    if (seen < dropped) usleep(500000);
  }
  EXPECT_GE(seen, dropped) << "prometheus never showed the drops; last answer: " << last << "\n"
                           << prometheus_.log();
}

TEST_F(RunE2eTest, AFloodingSourceIsLoggedOnceAndCountedAsAnEvent) {
  startDaemon();
  // two floods a second apart, each long past the 10-packet burst: one limited episode
  // each, and within the daemon's 10 s interval only the first gets a line
  flood(0.5, 2000);
  usleep(1200000);
  flood(0.5, 2000);
  const std::string series =
      "floodgate_events_total{interface=\"" + net_->targetInterface() + "\",event=\"limited\"}";
  EXPECT_EQ(waitFor(series, [](double v) { return v >= 2; }), 2) << daemon_.log();
  const std::string line = "event=limited interface=" + net_->targetInterface() +
                           " source=" + kFlooder + " rule=per-source";
  EXPECT_EQ(linesWith(daemon_.log(), line), 1u) << daemon_.log();
  EXPECT_EQ(linesWith(daemon_.log(), "event="), 1u) << "no line per packet:\n" << daemon_.log();
}

TEST_F(RunE2eTest, AnInvalidConfigIsCountedAndIgnoredAndAnEditedFileIsReloaded) {
  startDaemon();
  std::ofstream(config_) << "rules:\n  - name: per-source\n    limit: {pps: 5k, brust: 3}\n";
  daemon_.signal(SIGHUP);
  // The write itself is a change too: one or two failures, never a success.
  double failures = waitFor("floodgate_config_reloads_total{result=\"failure\"}",
                            [](double v) { return v >= 1; });
  EXPECT_GE(failures, 1) << daemon_.log();
  usleep(400000);  // past the debounce of the write
  EXPECT_EQ(metric("floodgate_config_reloads_total{result=\"success\"}"), 0);
  EXPECT_EQ(metric("floodgate_config_generation"), 1);
  EXPECT_NE(daemon_.log().find("brust"), std::string::npos) << daemon_.log();

  // The old rule (100/s, burst 10) still holds.
  uint64_t sent = flood(0.5, 2000);
  double passed = metric(packets("pass", "default"));
  EXPECT_GT(metric(packets("drop", "rate")), 0);
  EXPECT_LE(passed, 10 + 100 * 0.6 + 5) << "of " << sent;

  renameOver(100000, 100000);
  double generation = waitFor("floodgate_config_generation", [](double v) { return v >= 2; });
  EXPECT_EQ(generation, 2) << daemon_.log();
  EXPECT_EQ(metric("floodgate_config_reloads_total{result=\"success\"}"), 1);
  double drops = metric(packets("drop", "rate"));
  sent = flood(0.3, 2000);
  EXPECT_EQ(metric(packets("drop", "rate")), drops) << "the new, higher limit drops nothing";
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status, 200);
}

// The text of `path`, or "" if it cannot be read.
std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The `version:` line of a published policy document, or "".
std::string publishedVersion(const std::string& document) {
  std::istringstream in(document);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("version: ", 0) != 0) continue;
    std::string version = line.substr(9);
    if (version.size() >= 2 && version.front() == '"')
      version = version.substr(1, version.size() - 2);
    return version;
  }
  return "";
}

TEST_F(RunE2eTest, PublishesTheHttpPoliciesOnStartAndAfterEveryReload) {
  const std::string published = dir_ + "/run/http-policies.yaml";
  auto write = [&](int capacity) {
    std::ofstream(config_) << "interfaces:\n  - name: " << net_->targetInterface()
                           << "\nrules:\n  - name: per-source\n    match: {protocol: udp}\n"
                           << "    limit: {pps: 100, burst: 10}\nhttp:\n  publish: {file: "
                           << published << "}\n  policies:\n    - {name: per-ip, key: ip, "
                           << "algorithm: gcra, capacity: " << capacity << ", rate_per_s: 1}\n";
  };
  write(10);
  startDaemon();
  const std::string first = publishedVersion(readText(published));
  EXPECT_EQ(first.size(), 16u) << daemon_.log();
  EXPECT_NE(daemon_.log().find("published http policies version " + first + " to " + published),
            std::string::npos)
      << daemon_.log();

  write(20);
  daemon_.signal(SIGHUP);
  std::string now = first;
  for (int i = 0; i < 100 && (now == first || now.empty()); ++i) {
    usleep(50000);
    now = publishedVersion(readText(published));
  }
  EXPECT_NE(now, first) << daemon_.log();
  EXPECT_NE(readText(published).find("capacity: 20"), std::string::npos) << readText(published);
}

TEST_F(RunE2eTest, SigtermDetachesAndHealthzNoticesAnExternalDetach) {
  startDaemon();
  ASSERT_TRUE(attached());
  ASSERT_EQ(net_->floodgate({"detach", net_->targetInterface()}).exit_code, 0);
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status, 503);
  // a detach is no change of config or program: the daemon's seconds see the pins go
  sleep(2);
  EXPECT_EQ(daemon_.log().find("outside the daemon"), std::string::npos) << daemon_.log();
  // Put back by a reload (once it is counted, it is done), then SIGTERM takes it away.
  daemon_.signal(SIGHUP);
  waitFor("floodgate_config_reloads_total{result=\"success\"}", [](double v) { return v >= 1; });
  ASSERT_TRUE(attached()) << daemon_.log();
  daemon_.signal(SIGTERM);
  EXPECT_EQ(daemon_.wait(5), 0) << daemon_.log();
  EXPECT_FALSE(attached());
}

TEST_F(RunE2eTest, KeepAttachedLeavesItEnforcingAndASecondRunAdoptsItsCounters) {
  startDaemon({"--keep-attached"});
  flood(0.3, 2000);
  double dropped = metric(packets("drop", "rate"));
  double passed = metric(packets("pass", "default"));
  ASSERT_GT(dropped, 0);
  daemon_.signal(SIGTERM);
  ASSERT_EQ(daemon_.wait(5), 0) << daemon_.log();
  ASSERT_TRUE(attached()) << "--keep-attached detached the limiter";

  // Still enforcing with no daemon.
  CommandResult stats = net_->floodgate({"stats", net_->targetInterface(), "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;

  startDaemon();
  EXPECT_NE(daemon_.log().find("adopted"), std::string::npos) << daemon_.log();
  EXPECT_GE(metric(packets("drop", "rate")), dropped) << "counters were reset";
  EXPECT_GE(metric(packets("pass", "default")), passed);
  // The adopted limiter keeps enforcing and counting on top of what it had.
  flood(0.2, 2000);
  EXPECT_GT(metric(packets("drop", "rate")), dropped);
  EXPECT_EQ(metric("floodgate_config_generation"), 1);
  daemon_.signal(SIGTERM);
  EXPECT_EQ(daemon_.wait(5), 0) << daemon_.log();
  EXPECT_FALSE(attached());
}

// Prometheus keeps its connection: every scrape after the first is on it, and a response
// written in two parts waits up to 40 ms for a delayed ACK unless TCP_NODELAY is on.
TEST_F(RunE2eTest, MetricsAreServedOnKeepAliveConnectionsWithTcpNodelay) {
  startDaemon();
  std::unique_ptr<http::testing::KeepAliveClient> client;
  std::thread in_target([&] {
    int fd = open(net_->targetNetns().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && setns(fd, CLONE_NEWNET) == 0)
      client = std::make_unique<http::testing::KeepAliveClient>(kMetricsPort);
    if (fd >= 0) close(fd);
  });
  in_target.join();
  ASSERT_TRUE(client && client->fd() >= 0) << "cannot connect to /metrics in the namespace";
  for (int scrape = 0; scrape < 3; ++scrape) EXPECT_EQ(client->get("/metrics"), 200) << scrape;
  EXPECT_EQ(http::testing::serverTcpNodelay(daemon_.pid(), *client), 1)
      << "the daemon's end of a scrape connection has TCP_NODELAY off";
}

TEST_F(RunE2eTest, TheConfigsNextProgramKeepsItsStateThroughReloadsAndRestartsAndOutlivesStop) {
  interface_keys_ = std::string("\n    next: {object: ") + COUNT_PASS_OBJECT + "}";
  writeConfig(config_, 100, 10);
  auto nextId = [&]() -> uint32_t {
    CommandResult r = net_->floodgate({"status", net_->targetInterface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto next = nlohmann::json::parse(r.out)["interfaces"][0]["next_program"];
    return next.is_null() ? 0 : next["id"].get<uint32_t>();
  };
  startDaemon({"--keep-attached"});
  const uint32_t first = nextId();
  ASSERT_NE(first, 0u) << daemon_.log();

  // an unrelated reload loads the object again, sees the same instructions, keeps the one
  // running (and its counts)
  renameOver(200, 20);
  waitFor("floodgate_config_reloads_total{result=\"success\"}", [](double v) { return v >= 1; });
  EXPECT_EQ(nextId(), first) << daemon_.log();
  daemon_.signal(SIGTERM);
  ASSERT_EQ(daemon_.wait(5), 0) << daemon_.log();
  ASSERT_TRUE(attached());
  EXPECT_EQ(nextId(), first) << "--keep-attached keeps the chain";

  startDaemon();
  EXPECT_NE(daemon_.log().find("adopted"), std::string::npos) << daemon_.log();
  EXPECT_EQ(nextId(), first) << "adoption keeps the next program";
  daemon_.signal(SIGTERM);
  EXPECT_EQ(daemon_.wait(5), 0) << daemon_.log();
  EXPECT_FALSE(attached());
  EXPECT_NE(daemon_.log().find("now runs on '" + net_->targetInterface() + "' directly"),
            std::string::npos)
      << daemon_.log();
  CommandResult link = net_->inTarget({"ip", "-j", "link", "show", "dev", net_->targetInterface()});
  const nlohmann::json shown = nlohmann::json::parse(link.out)[0];
  ASSERT_TRUE(shown.contains("xdp")) << link.out;
  EXPECT_EQ(shown["xdp"]["prog"]["id"].get<uint32_t>(), first) << "stop took floodgate alone out";
}

// A second daemon in the same network namespace, with a config of its own and a port of its
// own, changes nothing: it would adopt the first one's limiter and apply its rules to it.
TEST_F(RunE2eTest, ASecondRunInTheSameNamespaceExitsOneAndChangesNothing) {
  startDaemon();
  const std::string other = dir_ + "/other.yaml";
  std::ofstream(other) << "interfaces:\n  - name: " << net_->targetInterface()
                       << "\nrules:\n  - name: intruder\n    limit: {pps: 1}\n";
  auto second = ChildProcess::start(
      {"nsenter", "--net=" + net_->targetNetns(), FLOODGATE_BIN, "run", "--config", other,
       "--metrics-listen", "127.0.0.1:" + std::to_string(kMetricsPort + 1)},
      dir_ + "/second.log");
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->wait(10), 1) << second->log();
  EXPECT_NE(second->log().find("another floodgate run (pid "), std::string::npos) << second->log();
  EXPECT_TRUE(attached());
  CommandResult status = net_->floodgate({"status", net_->targetInterface(), "--json"});
  EXPECT_EQ(status.out.find("intruder"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("per-source"), std::string::npos) << status.out;
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status, 200);
}

// With port 0 the kernel picks the port: the start's line names that one, which answers.
TEST_F(RunE2eTest, ThePortTheKernelChoseIsTheOneLogged) {
  auto daemon = ChildProcess::start({"nsenter", "--net=" + net_->targetNetns(), FLOODGATE_BIN,
                                     "run", "--config", config_, "--metrics-listen", "127.0.0.1:0"},
                                    dir_ + "/port-zero.log");
  ASSERT_TRUE(daemon.ok()) << daemon.error().message;
  const std::string head = "serving metrics on http://127.0.0.1:";
  size_t at = std::string::npos;
  for (int i = 0; i < 200 && at == std::string::npos; ++i) {
    at = daemon->log().find(head);
    if (at == std::string::npos) usleep(50000);
  }
  ASSERT_NE(at, std::string::npos) << daemon->log();
  const int port = std::atoi(daemon->log().c_str() + at + head.size());
  EXPECT_GT(port, 0) << daemon->log();
  EXPECT_EQ(daemon->log().substr(at + head.size() + std::to_string(port).size(), 9), "/metrics\n");
  EXPECT_EQ(httpGetIn(net_->targetNetns(), port, "/healthz").status, 200) << daemon->log();
  daemon->signal(SIGTERM);  // detaches what it attached
  EXPECT_EQ(daemon->wait(10), 0) << daemon->log();
}

// A metrics port another program holds fails the start before anything is attached: were
// it found only after the attach, the failed start would detach again, and so would every
// restart of the unit's Restart=on-failure, leaving the host unprotected for as long as
// anyone held the port.
TEST_F(RunE2eTest, ATakenMetricsPortFailsTheStartBeforeAnythingIsAttached) {
  const UniqueFd squatter = squatMetricsPort();
  ASSERT_TRUE(squatter.valid()) << "cannot take the metrics port in the namespace";
  auto run = ChildProcess::start(
      {"nsenter", "--net=" + net_->targetNetns(), FLOODGATE_BIN, "run", "--config", config_,
       "--metrics-listen", "127.0.0.1:" + std::to_string(kMetricsPort)},
      dir_ + "/squatted.log");
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->wait(20), 1) << run->log();
  // one line, what is wrong and what to do, and nothing attached (nor detached) before it
  EXPECT_EQ(run->log(), "<3>floodgate: error: cannot listen for metrics on 127.0.0.1:" +
                            std::to_string(kMetricsPort) +
                            " (in use, or not an address of this host): choose another with "
                            "--metrics-listen\n");
  EXPECT_EQ(run->log().find("attached to"), std::string::npos) << run->log();
  EXPECT_FALSE(attached());
  EXPECT_FALSE(std::filesystem::exists("/sys/fs/bpf/floodgate/" + net_->targetInterface()));
}

// A restart that would adopt the limiter a --keep-attached run left, but cannot listen for
// metrics (another program took the port meanwhile), exits 1 before it touches that limiter,
// which goes on enforcing: a flood must not get through a failed restart.
TEST_F(RunE2eTest, ARestartThatCannotListenLeavesTheLimiterItFoundEnforcing) {
  startDaemon({"--keep-attached"});
  daemon_.signal(SIGTERM);
  ASSERT_EQ(daemon_.wait(5), 0) << daemon_.log();
  ASSERT_TRUE(attached());

  const UniqueFd squatter = squatMetricsPort();
  ASSERT_TRUE(squatter.valid()) << "cannot take the metrics port in the namespace";

  auto restart = ChildProcess::start(
      {"nsenter", "--net=" + net_->targetNetns(), FLOODGATE_BIN, "run", "--config", config_,
       "--metrics-listen", "127.0.0.1:" + std::to_string(kMetricsPort)},
      dir_ + "/restart.log");
  ASSERT_TRUE(restart.ok()) << restart.error().message;
  EXPECT_EQ(restart->wait(20), 1) << restart->log();
  EXPECT_EQ(restart->log().find("adopted"), std::string::npos) << restart->log();
  EXPECT_NE(restart->log().find("cannot listen for metrics"), std::string::npos) << restart->log();
  ASSERT_TRUE(attached()) << "a failed start took away a limiter it found attached";
  auto rate_drops = [&] {
    CommandResult stats = net_->floodgate({"stats", net_->targetInterface(), "--json"});
    EXPECT_EQ(stats.exit_code, 0) << stats.err;
    uint64_t drops = 0;
    const nlohmann::json parsed = nlohmann::json::parse(stats.out);
    for (const auto& row : parsed["counters"]) {
      if (row["verdict"] == "drop" && row["reason"] == "rate")
        drops += row["packets"].get<uint64_t>();
    }
    return drops;
  };
  const uint64_t before = rate_drops();
  flood(0.3, 2000);
  uint64_t after = before;
  for (int i = 0; i < 40 && after == before; ++i, usleep(50000)) after = rate_drops();
  EXPECT_GT(after, before) << "the flood is no longer held back";
  EXPECT_EQ(net_->floodgate({"detach", net_->targetInterface()}).exit_code, 0);
}

TEST_F(RunE2eTest, AMissingInterfaceIsReportedUnhealthyAndAttachedWhenItAppears) {
  // unique to this veth network: pins are named by interface, in the host's one bpffs
  const std::string late = "fgl" + net_->targetInterface().substr(3);
  const std::string late_peer = "fgp" + net_->targetInterface().substr(3);
  const PinsGone pins_gone{late};
  std::ofstream(config_) << "interfaces:\n  - name: " << net_->targetInterface()
                         << "\n  - name: " << late
                         << "\nrules:\n  - name: per-source\n    match: {protocol: udp}\n"
                         << "    limit: {pps: 100, burst: 10}\n";
  startDaemon({}, 503);
  EXPECT_TRUE(attached()) << "the interface that exists is attached:\n" << daemon_.log();
  HttpReply health = httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz");
  EXPECT_EQ(health.body, late + ": no such interface (attached when it appears)\n");
  std::string text = scrape();
  EXPECT_EQ(sampleValue(text, "floodgate_interface_up{interface=\"" + late + "\"}"), 0) << text;
  EXPECT_EQ(
      sampleValue(text, "floodgate_interface_up{interface=\"" + net_->targetInterface() + "\"}"), 1)
      << text;
  // logged once, as a warning, however often it is looked for
  usleep(2500000);
  EXPECT_EQ(linesWith(daemon_.log(), "no network interface named '" + late + "'"), 1u)
      << daemon_.log();
  EXPECT_NE(daemon_.log().find("<4>no network interface named '" + late + "'"), std::string::npos)
      << daemon_.log();

  ASSERT_EQ(net_->inTarget({"ip", "link", "add", late, "type", "veth", "peer", "name", late_peer})
                .exit_code,
            0);
  bool healthy = false;
  for (int i = 0; i < 100 && !healthy; ++i) {  // looked for every second
    healthy = httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status == 200;
    if (!healthy) usleep(50000);
  }
  EXPECT_TRUE(healthy) << daemon_.log();
  EXPECT_EQ(net_->floodgate({"stats", late}).exit_code, 0) << "attached without a restart";
  EXPECT_NE(daemon_.log().find("attached to " + late + " (1 rule): it appeared"), std::string::npos)
      << daemon_.log();
  EXPECT_EQ(metric("floodgate_interface_up{interface=\"" + late + "\"}"), 1);
  EXPECT_EQ(metric("floodgate_config_generation"), 1) << "no reload was needed";

  daemon_.signal(SIGTERM);
  EXPECT_EQ(daemon_.wait(5), 0) << daemon_.log();
  EXPECT_NE(net_->floodgate({"stats", late}).exit_code, 0) << "detached on SIGTERM";
}

// An interface the daemon holds, deleted and made again (a restarted network service, a
// reloaded driver): the kernel cut the limiter's link loose with the old device, so until the
// daemon attaches it again nothing runs there. It is reported while the interface is gone,
// and attached again, its state kept, once it is back.
TEST_F(RunE2eTest, AnInterfaceDeletedAndMadeAgainIsAttachedAgainWithItsState) {
  const std::string iface = net_->targetInterface();
  const std::string up = "floodgate_interface_up{interface=\"" + iface + "\"}";
  startDaemon();
  ASSERT_EQ(net_->floodgate({"ban", "add", iface, "192.0.2.1", "--for", "10m"}).exit_code, 0);
  ASSERT_EQ(net_->inTarget({"ip", "link", "del", iface}).exit_code, 0);
  const std::string gone = iface + " was deleted: its limiter runs nowhere";
  for (int i = 0; i < 100 && daemon_.log().find(gone) == std::string::npos; ++i) usleep(50000);
  EXPECT_EQ(metric(up), 0) << daemon_.log();
  HttpReply health = httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.body, iface + ": no such interface (attached when it appears)\n");

  {
    // back, and another XDP program took its hook first (put there while the attach lock
    // held here kept the daemon from attaching): the interface is there, its limiter is not
    // running on it, and that is what is reported until the hook is free again
    UniqueFd lock = holdAttachLock();
    ASSERT_TRUE(net_->remake().ok());
    ASSERT_TRUE(daemonWaitsForAttachLock()) << daemon_.log();
    ASSERT_EQ(net_->inTarget({"ip", "link", "set", "dev", iface, "xdpgeneric", "obj",
                              COUNT_PASS_OBJECT, "sec", "xdp"})
                  .exit_code,
              0);
  }
  const std::string refused = "already has an XDP program that floodgate did not attach";
  for (int i = 0; i < 100 && daemon_.log().find(refused) == std::string::npos; ++i) usleep(50000);
  EXPECT_EQ(metric(up), 0) << daemon_.log();
  health = httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.body, iface +
                             ": its limiter was cut off it when the interface was deleted "
                             "(being attached again: see the log)\n");
  ASSERT_EQ(net_->inTarget({"ip", "link", "set", "dev", iface, "xdpgeneric", "off"}).exit_code, 0);
  const auto isUp = [](double v) { return v == 1; };
  EXPECT_EQ(waitFor(up, isUp, 10), 1) << daemon_.log();
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status, 200);
  CommandResult link = net_->inTarget({"ip", "link", "show", iface});
  EXPECT_NE(link.out.find("prog/xdp"), std::string::npos) << "enforcing again:\n" << link.out;
  CommandResult bans = net_->floodgate({"ban", "list", iface});
  EXPECT_NE(bans.out.find("192.0.2.1"), std::string::npos) << "its state kept:\n" << bans.out;
  EXPECT_EQ(linesWith(daemon_.log(), gone), 1u) << "logged once:\n" << daemon_.log();
  EXPECT_NE(daemon_.log().find("attached to it again, its state kept"), std::string::npos)
      << daemon_.log();
  // and the flood is held back on the new device
  const auto rate_drops = [&] { return metric(packets("drop", "rate")); };
  const double before = rate_drops();
  flood(0.3, 2000);
  double after = before;
  for (int i = 0; i < 40 && after == before; ++i, usleep(50000)) after = rate_drops();
  EXPECT_GT(after, before) << "the flood is not held back";
}

// A limiter the daemon holds, detached and attached again by hand while the daemon runs: the
// daemon holds the new one (its config applied to it), so what it counts, bans and reloads
// is the limiter running, not the one detached.
TEST_F(RunE2eTest, ALimiterAttachedAgainOutsideTheDaemonIsTheOneItHolds) {
  const std::string iface = net_->targetInterface();
  startDaemon();
  ASSERT_EQ(net_->floodgate({"detach", iface}).exit_code, 0);
  ASSERT_EQ(net_->floodgate({"attach", iface, "--rate", "100k"}).exit_code, 0);
  const std::string followed = iface + " was attached again outside the daemon";
  const std::string applied = iface + ": its config applied to the limiter attached outside";
  for (int i = 0; i < 100 && daemon_.log().find(applied) == std::string::npos; ++i) usleep(50000);
  ASSERT_NE(daemon_.log().find(applied), std::string::npos) << daemon_.log();
  CommandResult status = net_->floodgate({"status", iface});
  EXPECT_NE(status.out.find("per-source"), std::string::npos) << "the daemon's config:\n"
                                                              << status.out;
  // the daemon's counters are the running limiter's
  const std::string drops = "floodgate_rule_packets_total{interface=\"" + iface +
                            "\",rule=\"per-source\",verdict=\"drop\"}";
  flood(0.3, 2000);
  EXPECT_GT(waitFor(drops, [](double v) { return v > 0; }), 0) << daemon_.log();
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status, 200);
  EXPECT_EQ(linesWith(daemon_.log(), followed), 1u) << "logged once:\n" << daemon_.log();
}

// A limiter the daemon holds, replaced by hand over the same maps (`attach --replace` with
// rules of its own): the daemon sees another program run with the maps and applies its
// config to it within a second. Reloaded by hand: the write count moved, which the daemon
// reports (unhealthy) until its own next reload. What it says it runs is what runs.
TEST_F(RunE2eTest, ALimiterReplacedOrReloadedOutsideTheDaemonIsGivenItsConfigAgain) {
  const std::string iface = net_->targetInterface();
  startDaemon();
  ASSERT_EQ(rulePps(iface), 100);
  std::ofstream(dir_ + "/other.yaml") << "rules:\n  - name: other\n    limit: {pps: 7}\n";
  CommandResult replaced =
      net_->floodgate({"attach", iface, "--replace", "--config", dir_ + "/other.yaml"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  const std::string noticed = iface + "'s program was replaced outside the daemon";
  const std::string applied = iface + ": its config applied to the limiter attached outside";
  for (int i = 0; i < 100 && daemon_.log().find(applied) == std::string::npos; ++i) usleep(50000);
  ASSERT_NE(daemon_.log().find(applied), std::string::npos) << daemon_.log();
  EXPECT_EQ(rulePps(iface), 100) << "the daemon's config runs again";
  EXPECT_EQ(linesWith(daemon_.log(), noticed), 1u) << "logged once:\n" << daemon_.log();
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status, 200);
  // a reload by hand, which puts in no program, is told apart by the write count: said, not
  // undone (two writers must not take turns), until the daemon's own next reload
  CommandResult reloaded = net_->floodgate({"reload", iface, "--config", dir_ + "/other.yaml"});
  ASSERT_EQ(reloaded.exit_code, 0) << reloaded.err;
  const std::string rewritten = iface + "'s config was reloaded outside the daemon";
  for (int i = 0; i < 100 && linesWith(daemon_.log(), rewritten) == 0; ++i) usleep(50000);
  ASSERT_EQ(linesWith(daemon_.log(), rewritten), 1u) << daemon_.log();
  HttpReply health = httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.body, iface +
                             ": its config was reloaded outside the daemon, and it runs that "
                             "one until the daemon reloads (see the log)\n");
  EXPECT_EQ(metric("floodgate_interface_up{interface=\"" + iface + "\"}"), 0);
  EXPECT_EQ(rulePps(iface), 7) << "the hand's config runs";
  sleep(2);
  EXPECT_EQ(linesWith(daemon_.log(), rewritten), 1u) << "said once:\n" << daemon_.log();
  EXPECT_EQ(linesWith(daemon_.log(), applied), 1u) << "not undone:\n" << daemon_.log();

  // the daemon's own reload ends it, and is neither
  renameOver(200, 10);
  EXPECT_EQ(waitFor(
                "floodgate_config_generation", [](double v) { return v >= 2; }, 30),
            2)
      << daemon_.log();
  EXPECT_EQ(rulePps(iface), 200);
  for (int i = 0; i < 100 && httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status != 200;
       ++i) {
    usleep(50000);
  }
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status, 200) << daemon_.log();
  sleep(2);
  EXPECT_EQ(linesWith(daemon_.log(), noticed), 1u) << daemon_.log();
  EXPECT_EQ(linesWith(daemon_.log(), rewritten), 1u) << daemon_.log();
  EXPECT_EQ(linesWith(daemon_.log(), applied), 1u) << daemon_.log();
}

// An attach, replace or detach by hand holds the attach lock to its last pin or program swap,
// and what the daemon would see meanwhile is half done (a replace's rules written and counted,
// its program not swapped yet: a reload by hand, read then). The daemon looks at its limiters
// again once the lock is free: here the test holds it over a reload by hand.
TEST_F(RunE2eTest, TheDaemonLooksAtItsLimitersWhenNoAttachOrDetachIsUnderWay) {
  const std::string iface = net_->targetInterface();
  startDaemon();
  std::ofstream(dir_ + "/other.yaml") << "rules:\n  - name: other\n    limit: {pps: 7}\n";
  UniqueFd attaching = holdAttachLock();
  ASSERT_TRUE(attaching.valid());
  CommandResult reloaded = net_->floodgate({"reload", iface, "--config", dir_ + "/other.yaml"});
  ASSERT_EQ(reloaded.exit_code, 0) << reloaded.err;
  const std::string rewritten = iface + "'s config was reloaded outside the daemon";
  sleep(2);
  EXPECT_EQ(linesWith(daemon_.log(), rewritten), 0u) << "looked under way:\n" << daemon_.log();
  attaching = UniqueFd();
  for (int i = 0; i < 100 && linesWith(daemon_.log(), rewritten) == 0; ++i) usleep(50000);
  EXPECT_EQ(linesWith(daemon_.log(), rewritten), 1u) << daemon_.log();
}

// A program that does not use the limiter's maps put on floodgate's link outside floodgate
// (what `bpftool link update` does): nothing limits the interface, so the daemon reports it
// (once, unhealthy) rather than take it for a replace and apply its config to maps no program
// reads; `floodgate status` says so too. `attach --replace` puts floodgate's program back,
// which the daemon then gives its config.
TEST_F(RunE2eTest, AForeignProgramOnTheLinkIsReportedUntilAReplacePutsFloodgatesBack) {
  const std::string iface = net_->targetInterface();
  startDaemon();
  auto foreign = loadXdpProgramFile(COUNT_PASS_OBJECT, "");
  ASSERT_TRUE(foreign.ok()) << foreign.error().message;
  {
    UniqueFd link(bpf_obj_get(("/sys/fs/bpf/floodgate/" + iface + "/link").c_str()));
    ASSERT_TRUE(link.valid()) << strerror(errno);
    ASSERT_EQ(bpf_link_update(link.get(), foreign->get(), nullptr), 0) << strerror(errno);
  }
  const std::string noticed = iface + "'s link runs program ";
  for (int i = 0; i < 100 && linesWith(daemon_.log(), noticed) == 0; ++i) usleep(50000);
  ASSERT_EQ(linesWith(daemon_.log(), noticed), 1u) << daemon_.log();
  EXPECT_NE(daemon_.log().find("(count_pass), which does not use its limiter's maps"),
            std::string::npos)
      << daemon_.log();
  HttpReply health = httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.body, iface +
                             ": its link runs a program that does not use its limiter's maps "
                             "(put there outside floodgate), and nothing limits it (see the "
                             "log)\n");
  EXPECT_EQ(metric("floodgate_interface_up{interface=\"" + iface + "\"}"), 0);
  CommandResult status = net_->floodgate({"status", iface});
  EXPECT_NE(status.out.find("NOT RUNNING: the program on its link does not use this limiter's "
                            "maps"),
            std::string::npos)
      << status.out;
  CommandResult json = net_->floodgate({"status", iface, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["interfaces"][0]["foreign_program"], true);
  sleep(2);
  EXPECT_EQ(linesWith(daemon_.log(), noticed), 1u) << "said once:\n" << daemon_.log();
  const std::string applied = iface + ": its config applied to the limiter attached outside";
  EXPECT_EQ(linesWith(daemon_.log(), applied), 0u) << "nothing to apply:\n" << daemon_.log();

  CommandResult replaced = net_->floodgate({"attach", iface, "--replace"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  for (int i = 0; i < 100 && linesWith(daemon_.log(), applied) == 0; ++i) usleep(50000);
  ASSERT_EQ(linesWith(daemon_.log(), applied), 1u) << daemon_.log();
  EXPECT_NE(daemon_.log().find(iface + ": a program that uses its limiter's maps runs on its "
                                       "link again"),
            std::string::npos)
      << daemon_.log();
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status, 200) << daemon_.log();
  EXPECT_EQ(rulePps(iface), 100);
  status = net_->floodgate({"status", iface});
  EXPECT_EQ(status.out.find("NOT RUNNING"), std::string::npos) << status.out;
}

// The same when the limiter attached by hand cannot take the daemon's config (its lists are
// smaller than the config's deny list): the daemon holds it, reports the interface unhealthy
// and tries each second, and applies its config once a limiter that can take it is attached.
TEST_F(RunE2eTest, AConfigTheLimiterAttachedOutsideCannotTakeIsReportedAndTriedAgain) {
  const std::string iface = net_->targetInterface();
  // adaptive too: its governor leaves such a limiter alone meanwhile, without a busy loop
  std::ofstream(config_) << "interfaces:\n  - name: " << iface
                         << "\n    adaptive:\n      capacity: {pps: 100000}\n"
                            "      floors: {per-source: {pps: 2, burst: 2}}\n"
                            "      interval: 250ms\n"
                            "deny: [192.0.2.1, 192.0.2.2, 192.0.2.3]\nrules:\n"
                            "  - name: per-source\n    limit: {pps: 100, burst: 10}\n";
  std::ofstream(dir_ + "/small.yaml") << "defaults: {list_size: 2}\nrules:\n"
                                         "  - name: other\n    limit: {pps: 100000}\n";
  startDaemon();
  ASSERT_EQ(net_->floodgate({"detach", iface}).exit_code, 0);
  ASSERT_EQ(net_->floodgate({"attach", iface, "--config", dir_ + "/small.yaml"}).exit_code, 0);
  const std::string refused =
      iface + ": its config cannot be applied to the limiter attached outside the daemon";
  for (int i = 0; i < 200 && daemon_.log().find(refused) == std::string::npos; ++i) usleep(50000);
  ASSERT_NE(daemon_.log().find(refused), std::string::npos) << daemon_.log();
  HttpReply health = httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.body, iface +
                             ": attached again or replaced outside the daemon, and its "
                             "config is not applied to that limiter yet (see the log)\n");
  EXPECT_EQ(rulePps(iface), 100000) << "it runs what it was attached with";
  EXPECT_EQ(linesWith(daemon_.log(), refused), 1u) << "logged once:\n" << daemon_.log();
  EXPECT_EQ(metric("floodgate_interface_up{interface=\"" + iface + "\"}"), 0);
  // waiting costs the daemon no CPU to speak of: not a second of CPU in two of waiting
  const double cpu_before = cpuSeconds(daemon_.pid());
  sleep(2);
  EXPECT_LT(cpuSeconds(daemon_.pid()) - cpu_before, 1.0) << "a busy loop";
  // a reload meanwhile is not held back by it: it is applied, and this interface is given
  // the new config once it can take it
  reloadTo("interfaces:\n  - name: " + iface +
           "\n    adaptive:\n      capacity: {pps: 100000}\n"
           "      floors: {per-source: {pps: 2, burst: 2}}\n      interval: 250ms\n"
           "deny: [192.0.2.1, 192.0.2.2, 192.0.2.3]\nrules:\n"
           "  - name: per-source\n    limit: {pps: 200, burst: 10}\n");
  EXPECT_EQ(waitFor(
                "floodgate_config_generation", [](double v) { return v >= 2; }, 30),
            2)
      << daemon_.log();
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status, 503);

  ASSERT_EQ(net_->floodgate({"detach", iface}).exit_code, 0);
  ASSERT_EQ(net_->floodgate({"attach", iface, "--rate", "100k"}).exit_code, 0);
  const std::string applied = iface + ": its config applied to the limiter attached outside";
  for (int i = 0; i < 100 && daemon_.log().find(applied) == std::string::npos; ++i) usleep(50000);
  ASSERT_NE(daemon_.log().find(applied), std::string::npos) << daemon_.log();
  EXPECT_EQ(rulePps(iface), 200);
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").status, 200);
  EXPECT_EQ(metric("floodgate_interface_up{interface=\"" + iface + "\"}"), 1);
}

// An interface the daemon holds, renamed, and another made under its name: the limiter stays
// on the renamed device, which the daemon does not take it from; the name it was told to
// protect is reported unprotected.
TEST_F(RunE2eTest, ARenamedInterfaceIsReportedAsNotProtectedUnderItsName) {
  const std::string iface = net_->targetInterface(), renamed = "fgr" + iface.substr(3);
  startDaemon();
  Status renamed_target = net_->renameTarget(renamed, "fgp" + iface.substr(3));
  ASSERT_TRUE(renamed_target.ok()) << renamed_target.error().message;
  const std::string up = "floodgate_interface_up{interface=\"" + iface + "\"}";
  EXPECT_EQ(waitFor(up, [](double v) { return v == 0; }), 0) << daemon_.log();
  HttpReply health = httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.body, iface +
                             ": its limiter runs on the device it was renamed from "
                             "('floodgate status " +
                             iface + "' says what to do)\n");
}

// A reload that one attached limiter cannot take (its deny list longer than the list size that
// limiter runs with, which a reload keeps) changes no interface: not those listed before it.
// Both when the daemon would adopt that limiter in the reload and when it already holds it.
TEST_F(RunE2eTest, AReloadThatOneInterfaceCannotTakeChangesNone) {
  const std::string small = "fgs" + net_->targetInterface().substr(3);
  const PinsGone pins_gone{small};
  ASSERT_EQ(net_->inTarget({"ip", "link", "add", small, "type", "veth", "peer", "name",
                            "fgq" + net_->targetInterface().substr(3)})
                .exit_code,
            0);
  auto config = [&](const std::vector<std::string>& names, const std::string& defaults,
                    uint64_t pps, const std::string& deny) {
    std::string text = "interfaces:\n";
    for (const std::string& name : names) text += "  - name: " + name + "\n";
    return text + "defaults: {" + defaults + "}\ndeny: [" + deny +
           "]\nrules:\n  - name: per-source\n    match: {protocol: udp}\n"
           "    limit: {pps: " +
           std::to_string(pps) + ", burst: 10}\n";
  };
  auto unchanged = [&](const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      CommandResult status = net_->floodgate({"status", name, "--json"});
      ASSERT_EQ(status.exit_code, 0) << status.err;
      auto rule = nlohmann::json::parse(status.out)["interfaces"][0]["rules"][0];
      EXPECT_EQ(rule["limit"]["pps"], 100) << name << " kept its rule";
      CommandResult deny = net_->floodgate({"deny", "list", name});
      EXPECT_EQ(deny.out, "192.0.2.1\n") << name << ": " << deny.err;
    }
  };
  const std::vector<std::string> both = {net_->targetInterface(), small};
  const std::string long_deny = "192.0.2.1, 192.0.2.2, 192.0.2.3";
  // the second interface runs with room for 2 prefixes a list, attached by hand
  std::ofstream(dir_ + "/small.yaml") << config({small}, "list_size: 2", 100, "192.0.2.1");
  CommandResult attached_small =
      net_->floodgate({"attach", small, "--config", dir_ + "/small.yaml"});
  ASSERT_EQ(attached_small.exit_code, 0) << attached_small.err;
  std::ofstream(config_) << config({net_->targetInterface()}, "list_size: 1000", 100, "192.0.2.1");
  startDaemon();

  // the reload would adopt it
  reloadTo(config(both, "list_size: 1000", 200, long_deny));
  EXPECT_EQ(waitFor("floodgate_config_reloads_total{result=\"failure\"}",
                    [](double v) { return v >= 1; }),
            1)
      << daemon_.log();
  EXPECT_EQ(linesWith(daemon_.log(), small + ": the deny list holds 3 IPv4 prefixes"), 1u)
      << daemon_.log();
  unchanged(both);

  // adopted by a reload it can take, then held
  reloadTo(config(both, "list_size: 1000", 100, "192.0.2.1"));
  EXPECT_EQ(waitFor("floodgate_config_generation", [](double v) { return v >= 2; }), 2)
      << daemon_.log();
  reloadTo(config(both, "list_size: 1000", 200, long_deny));
  EXPECT_EQ(waitFor("floodgate_config_reloads_total{result=\"failure\"}",
                    [](double v) { return v >= 2; }),
            2)
      << daemon_.log();
  EXPECT_EQ(linesWith(daemon_.log(), small + ": the deny list holds 3 IPv4 prefixes"), 2u)
      << daemon_.log();
  EXPECT_EQ(metric("floodgate_config_generation"), 2);
  unchanged(both);
}

// A reload that adds interfaces attaches them before it changes any other: one the kernel
// refuses (here, its root program array is not there) takes back those attached before it,
// and the running interface keeps its rules. A next program that does not load for one
// held interface is refused before any other is reloaded.
TEST_F(RunE2eTest, AReloadWhoseNewInterfaceCannotBeAttachedChangesNone) {
  const std::string tag = net_->targetInterface().substr(3);
  const std::string good = "fgs" + tag, bad = "fgb" + tag;
  const PinsGone pins_gone{good};
  for (const auto& [name, peer] : {std::pair{good, "fgq" + tag}, std::pair{bad, "fgr" + tag}}) {
    ASSERT_EQ(
        net_->inTarget({"ip", "link", "add", name, "type", "veth", "peer", "name", peer}).exit_code,
        0);
  }
  const std::string rule = "rules:\n  - name: per-source\n    limit: {pps: ";
  std::ofstream(config_) << "interfaces: [" << net_->targetInterface() << "]\n"
                         << rule << "100, burst: 10}\n";
  startDaemon();

  std::ofstream(dir_ + "/.new.yaml")
      << "interfaces:\n  - name: " << net_->targetInterface() << "\n  - name: " << good
      << "\n  - name: " << bad
      << "\n    into_prog_array: {path: /sys/fs/bpf/fg-e2e-no-such-array, slot: 0}\n"
      << rule << "200, burst: 10}\n";
  ASSERT_EQ(std::rename((dir_ + "/.new.yaml").c_str(), config_.c_str()), 0);
  EXPECT_EQ(waitFor("floodgate_config_reloads_total{result=\"failure\"}",
                    [](double v) { return v >= 1; }),
            1)
      << daemon_.log();
  EXPECT_EQ(linesWith(daemon_.log(), "(no interface was changed)"), 1u) << daemon_.log();
  EXPECT_EQ(linesWith(daemon_.log(), "detached " + good +
                                         ": the config that attached it was "
                                         "refused"),
            1u)
      << daemon_.log();
  EXPECT_NE(net_->floodgate({"stats", good}).exit_code, 0) << good << " is not left attached";
  CommandResult status = net_->floodgate({"status", net_->targetInterface(), "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(nlohmann::json::parse(status.out)["interfaces"][0]["rules"][0]["limit"]["pps"], 100)
      << "the running interface kept its rule";

  // with both held, a next program that cannot be loaded for the second changes neither
  auto both = [&](uint64_t pps, const std::string& next) {
    std::ofstream(dir_ + "/.new.yaml") << "interfaces:\n  - name: " << net_->targetInterface()
                                       << "\n  - name: " << good << next << "\n"
                                       << rule << pps << ", burst: 10}\n";
    ASSERT_EQ(std::rename((dir_ + "/.new.yaml").c_str(), config_.c_str()), 0);
  };
  both(100, "");
  ASSERT_EQ(waitFor("floodgate_config_generation", [](double v) { return v >= 2; }), 2)
      << daemon_.log();
  both(200, "\n    next: {pinned: /sys/fs/bpf/fg-e2e-no-such-program}");
  EXPECT_EQ(waitFor("floodgate_config_reloads_total{result=\"failure\"}",
                    [](double v) { return v >= 2; }),
            2)
      << daemon_.log();
  EXPECT_EQ(linesWith(daemon_.log(), "(no interface was changed)"), 2u) << daemon_.log();
  for (const std::string& name : {net_->targetInterface(), good}) {
    CommandResult held = net_->floodgate({"status", name, "--json"});
    ASSERT_EQ(held.exit_code, 0) << held.err;
    EXPECT_EQ(nlohmann::json::parse(held.out)["interfaces"][0]["rules"][0]["limit"]["pps"], 100)
        << name << " kept its rule";
  }
}

// A reload while another writer holds the second interface's lock for longer than the daemon
// waits fails before it changes any interface (it takes every lock first: put back after a
// change, a rule the reload removed would start over), and lets go of none it was to detach:
// every interface still runs the config before. Once the lock is free, the same config is
// applied whole.
TEST_F(RunE2eTest, AReloadAnotherWriterHoldsAnInterfaceOfChangesNone) {
  const std::string tag = net_->targetInterface().substr(3);
  const std::string second = "fgs" + tag, gone = "fgg" + tag;
  const PinsGone second_pins{second}, gone_pins{gone};
  for (const auto& [name, peer] : {std::pair{second, "fgq" + tag}, std::pair{gone, "fgh" + tag}}) {
    ASSERT_EQ(
        net_->inTarget({"ip", "link", "add", name, "type", "veth", "peer", "name", peer}).exit_code,
        0);
  }
  std::ofstream(config_) << configOf({net_->targetInterface(), second, gone}, 100);
  startDaemon();
  for (int i = 0; i < 200 && rulePps(gone) != 100; ++i) usleep(50000);
  ASSERT_EQ(rulePps(gone), 100) << daemon_.log();

  expectReloadRefusedWhileLocked(second, configOf({net_->targetInterface(), second}, 200));
  EXPECT_EQ(rulePps(net_->targetInterface()), 100) << daemon_.log();
  EXPECT_EQ(rulePps(second), 100) << daemon_.log();
  EXPECT_EQ(rulePps(gone), 100) << "not let go for a config that was not applied\n"
                                << daemon_.log();

  reloadTo(configOf({net_->targetInterface(), second}, 200));
  EXPECT_EQ(waitFor(
                "floodgate_config_generation", [](double v) { return v >= 2; }, 30),
            2)
      << daemon_.log();
  EXPECT_EQ(rulePps(net_->targetInterface()), 200) << daemon_.log();
  EXPECT_EQ(rulePps(second), 200) << daemon_.log();
  EXPECT_EQ(rulePps(gone), -1) << "detached once the config was applied\n" << daemon_.log();
}

// The same when the interface another writer holds the lock of is one the reload would adopt
// (a limiter attached by hand): the lock is asked for before any interface changes, so the
// one listed before it is not reloaded and put back, and none is adopted.
TEST_F(RunE2eTest, AReloadThatWouldAdoptALimiterAnotherWriterHoldsChangesNone) {
  const std::string tag = net_->targetInterface().substr(3);
  const std::string second = "fgs" + tag;
  const PinsGone second_pins{second};
  ASSERT_EQ(
      net_->inTarget({"ip", "link", "add", second, "type", "veth", "peer", "name", "fgq" + tag})
          .exit_code,
      0);
  ASSERT_EQ(net_->floodgate({"attach", second, "--rate", "1k"}).exit_code, 0);
  std::ofstream(config_) << configOf({net_->targetInterface()}, 100);
  startDaemon();

  expectReloadRefusedWhileLocked(second, configOf({net_->targetInterface(), second}, 200));
  EXPECT_EQ(linesWith(daemon_.log(), "adopted"), 0u) << daemon_.log();
  EXPECT_EQ(rulePps(net_->targetInterface()), 100) << daemon_.log();

  reloadTo(configOf({net_->targetInterface(), second}, 200));
  EXPECT_EQ(waitFor(
                "floodgate_config_generation", [](double v) { return v >= 2; }, 30),
            2)
      << daemon_.log();
  EXPECT_EQ(linesWith(daemon_.log(), "adopted the limiter already attached to " + second), 1u)
      << daemon_.log();
  EXPECT_EQ(rulePps(net_->targetInterface()), 200) << daemon_.log();
  EXPECT_EQ(rulePps(second), 200) << daemon_.log();
}

// A reload can take seconds (the verifier; here, another attach holding the host's attach
// lock): meanwhile /metrics and /healthz answer, within the half second they wait for the
// state, from the answers kept at the last apply instead of timing out, even as the first
// requests of all; and the reload goes on once the lock is let go.
TEST_F(RunE2eTest, MetricsAndHealthAnswerWhileAReloadWaits) {
  const std::string added = "fgw" + net_->targetInterface().substr(3);
  const PinsGone pins_gone{added};
  ASSERT_EQ(net_->inTarget({"ip", "link", "add", added, "type", "veth", "peer", "name",
                            "fgv" + net_->targetInterface().substr(3)})
                .exit_code,
            0);
  const std::string rule = "rules:\n  - name: per-source\n    limit: {pps: 100}\n";
  std::ofstream(config_) << "interfaces: [" << net_->targetInterface() << "]\n" << rule;
  startDaemon();  // asks /healthz, not /metrics: the first scrape comes during the reload

  // another attach holds the lock: the reload's attach of `added` waits for it
  UniqueFd lock = holdAttachLock();
  ASSERT_TRUE(lock.valid());
  std::ofstream(dir_ + "/.new.yaml")
      << "interfaces: [" << net_->targetInterface() << ", " << added << "]\n"
      << rule;
  ASSERT_EQ(std::rename((dir_ + "/.new.yaml").c_str(), config_.c_str()), 0);
  ASSERT_TRUE(daemonWaitsForAttachLock()) << daemon_.log();
  HttpReply metrics = httpGetIn(net_->targetNetns(), kMetricsPort, "/metrics");
  HttpReply health = httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz");
  EXPECT_NE(net_->floodgate({"stats", added}).exit_code, 0) << "the reload is still waiting";
  lock = UniqueFd();

  EXPECT_EQ(metrics.status, 200) << daemon_.log();
  EXPECT_EQ(metrics.body.rfind("# floodgate is busy (applying a config, or waiting for another "
                               "command's lock): these are the values of the "
                               "last scrape\n",
                               0),
            0u)
      << metrics.body.substr(0, 200);
  EXPECT_EQ(sampleValue(metrics.body, "floodgate_config_generation"), 1);
  EXPECT_EQ(health.status, 200) << health.body;
  EXPECT_EQ(waitFor(
                "floodgate_config_generation", [](double v) { return v >= 2; }, 20),
            2)
      << daemon_.log();
  EXPECT_EQ(net_->floodgate({"stats", added}).exit_code, 0) << "attached once the lock was free";
}

// What `floodgate check` warns of is logged as a warning when the daemon applies the config.
TEST_F(RunE2eTest, ConfigWarningsAreLoggedWhenTheConfigIsApplied) {
  std::ofstream(config_) << "interfaces:\n  - name: " << net_->targetInterface()
                         << "\nallow: [\"::/0\"]\nrules:\n  - {name: r, limit: {pps: 10}}\n";
  startDaemon();
  EXPECT_EQ(linesWith(daemon_.log(), "<4>" + config_ +
                                         ": allow holds ::/0: it lets through, unlimited, every "
                                         "IPv6 source"),
            1u)
      << daemon_.log();
}

TEST_F(RunE2eTest, NoListedInterfaceYetStillRunsAndAnInvalidConfigIsStillRefused) {
  std::ofstream(config_) << "interfaces:\n  - name: fgnone0\nrules:\n  - name: per-source\n"
                         << "    match: {protocol: udp}\n    limit: {pps: 100, burst: 10}\n";
  startDaemon({}, 503);
  EXPECT_FALSE(attached());
  EXPECT_EQ(httpGetIn(net_->targetNetns(), kMetricsPort, "/healthz").body,
            "fgnone0: no such interface (attached when it appears)\n");
  daemon_.signal(SIGTERM);
  EXPECT_EQ(daemon_.wait(5), 0) << daemon_.log();

  // Invalid: refused at start as before, its last line carrying the error priority.
  std::ofstream(config_) << "interfaces:\n  - name: " << net_->targetInterface() << "\nbogus: 1\n";
  auto invalid = ChildProcess::start(
      {"nsenter", "--net=" + net_->targetNetns(), FLOODGATE_BIN, "run", "--config", config_},
      dir_ + "/invalid.log");
  ASSERT_TRUE(invalid.ok()) << invalid.error().message;
  EXPECT_EQ(invalid->wait(10), 1) << invalid->log();
  EXPECT_NE(invalid->log().find("<3>floodgate: error: " + config_ + " is not valid (1 problem)"),
            std::string::npos)
      << invalid->log();
  std::istringstream lines(invalid->log());
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.rfind("<", 0), 0u) << "every line has its priority: " << line;
  }
  EXPECT_FALSE(attached());
}

// floodgate_merged_packets: 1 for the veth of the network in generic mode (its peer is in
// another namespace, which cannot be read), and for a veth pair within the namespace 0 while
// the peer sends every segment on its own, then 1, and a line in the log, once the daemon's
// housekeeping (every 10 s) finds its TSO back on.
TEST_F(RunE2eTest, TheMergedPacketsMetricFollowsTheDevicesOnTheWay) {
  if (!haveProgram("ethtool")) GTEST_SKIP() << "ethtool is not installed (Debian: ethtool)";
  const std::string near = "fga" + net_->targetInterface().substr(3);
  const std::string far = "fgb" + net_->targetInterface().substr(3);
  const PinsGone pins_gone{near};
  for (const std::vector<std::string>& step :
       {std::vector<std::string>{"ip", "link", "add", near, "type", "veth", "peer", "name", far},
        {"ethtool", "-K", far, "tso", "off", "tx-udp-segmentation", "off", "tx-gso-list", "off",
         "tx-sctp-segmentation", "off"},
        {"ip", "link", "set", far, "up"},
        {"ip", "link", "set", near, "up"}}) {
    CommandResult r = net_->inTarget(step);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::ofstream(config_) << "interfaces:\n  - {name: " << net_->targetInterface()
                         << ", mode: generic}\n  - {name: " << near << ", mode: generic}\n"
                         << "rules:\n  - name: per-source\n    limit: {pps: 100, burst: 10}\n";
  startDaemon();
  const std::string target_series =
      "floodgate_merged_packets{interface=\"" + net_->targetInterface() + "\"}";
  const std::string near_series = "floodgate_merged_packets{interface=\"" + near + "\"}";
  std::string text = scrape();
  EXPECT_EQ(sampleValue(text, target_series), 1) << text;
  EXPECT_EQ(sampleValue(text, near_series), 0) << text;
  EXPECT_NE(daemon_.log().find("generic mode on '" + net_->targetInterface() + "'"),
            std::string::npos)
      << daemon_.log();

  CommandResult on = net_->inTarget({"ethtool", "-K", far, "tso", "on"});
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_EQ(waitFor(
                near_series, [](double v) { return v == 1; }, 25),
            1)
      << daemon_.log();
  EXPECT_NE(daemon_.log().find("generic mode on '" + near + "' meets a flow's segments merged"),
            std::string::npos)
      << daemon_.log();
  CommandResult status = net_->floodgate({"status", near});
  EXPECT_NE(status.out.find("WARNING: generic mode on '" + near + "'"), std::string::npos)
      << status.out;
  daemon_.signal(SIGTERM);
  EXPECT_EQ(daemon_.wait(5), 0) << daemon_.log();
}

}  // namespace
}  // namespace floodgate::test
