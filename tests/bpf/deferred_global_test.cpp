// SPDX-License-Identifier: MIT
// A global rule ahead of other rules charges its bucket only once they have admitted the
// packet: a flood the later rules drop never writes the bucket every CPU shares.
#include <bpf/bpf.h>
#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <string>
#include <thread>

#include "bpf/xdp_fixture.h"

namespace floodgate::test {
namespace {

class DeferredGlobalTest : public XdpProgramTest {
 protected:
  // Every UDP packet, one bucket for all of them.
  static RuleSpec globalUdp(uint64_t pps, uint64_t burst) {
    RuleSpec rule = sourceRule(pps, burst);
    rule.name = "global";
    rule.key = KeyKind::kGlobal;
    rule.protocol = Protocol::kUdp;
    return rule;
  }

  // DNS queries (UDP to port 53), one bucket per source.
  static RuleSpec dnsPerSource(uint64_t burst) {
    RuleSpec rule = sourceRule(1, burst);
    rule.name = "dns";
    rule.protocol = Protocol::kUdp;
    rule.dst_ports = {{53, 53}};
    return rule;
  }

  static std::vector<uint8_t> ntpFrom(const char* source) {
    return PacketBuilder().eth().ipv4(source, "198.51.100.1").udp(123).build();
  }

  void loadOnTestClock(std::vector<RuleSpec> rules) {
    AttachOptions options;
    options.test_clock_hz = 1000;
    load(std::move(rules), options);
    setClock(100000);
  }

  // The pps word of the global bucket of the rule named `name`, as the program left it.
  uint64_t globalWord(const std::string& name) {
    auto rules = limiter().activeRules();
    EXPECT_TRUE(rules.ok());
    UniqueFd state(bpf_obj_get(mapPinPath(pin_name_, "rule_state").c_str()));
    EXPECT_GE(state.get(), 0);
    for (const fg_rule& rule : *rules) {
      if (name != rule.name) continue;
      fg_rule_state value{};
      uint32_t id = rule.id;
      EXPECT_EQ(bpf_map_lookup_elem(state.get(), &id, &value), 0);
      return value.global_state[FG_LIMIT_PPS];
    }
    ADD_FAILURE() << "no rule " << name;
    return 0;
  }

  uint64_t ruleCount(size_t position, uint32_t verdict) {
    auto rules = limiter().ruleCounters();
    EXPECT_TRUE(rules.ok());
    return (*rules)[position].by_verdict[verdict].packets;
  }
};

// The bucket's time after a charge and its refund is where the charge found it, unless the
// bucket was idle: then the charge starts from now and the refund leaves it at now. So an
// idle bucket that a dropped packet leaves as it was was not written.
TEST_F(DeferredGlobalTest, APacketALaterRuleDropsLeavesTheGlobalBucketUnwritten) {
  loadOnTestClock({globalUdp(1000, 3), dnsPerSource(1)});
  ASSERT_EQ(run(udpFrom("192.0.2.1")), XDP_PASS);  // the global 1 of 3, .1's query 1 of 1
  const uint64_t idle = globalWord("global");
  ASSERT_NE(idle, 0u);
  // 10 ms on, the global bucket (1 ms a packet) is idle and full again; .1's is not (1 s)
  setClock(100000 + 10);
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 5), 0);
  EXPECT_EQ(globalWord("global"), idle);
  EXPECT_EQ(ruleCount(1, FG_VERDICT_DROP), 5u);
  // counted as before: the global rule admitted them, the DNS rule dropped them
  EXPECT_EQ(ruleCount(0, FG_VERDICT_PASS), 6u);
  EXPECT_EQ(ruleCount(0, FG_VERDICT_DROP), 0u);
}

// The charge that waited is made: the global bucket runs out at its burst, and what it then
// refuses is dropped and counted by it, whichever rules come after it.
TEST_F(DeferredGlobalTest, TheWaitingChargeIsMadeOnceTheLaterRulesAdmit) {
  loadOnTestClock({globalUdp(1, 3), dnsPerSource(10)});
  EXPECT_EQ(run(udpFrom("192.0.2.1")), XDP_PASS);
  EXPECT_EQ(run(udpFrom("192.0.2.2")), XDP_PASS);
  EXPECT_EQ(run(ntpFrom("192.0.2.3")), XDP_PASS);  // not a query: the global rule alone
  EXPECT_EQ(run(udpFrom("192.0.2.4")), XDP_DROP);
  EXPECT_EQ(run(ntpFrom("192.0.2.5")), XDP_DROP);
  EXPECT_EQ(ruleCount(0, FG_VERDICT_PASS), 3u);
  EXPECT_EQ(ruleCount(0, FG_VERDICT_DROP), 2u);
  // the DNS rule never saw .4's query: the global rule refused it before, as it is first
  EXPECT_EQ(ruleCount(1, FG_VERDICT_PASS), 2u);
  // a second later the global bucket has room for one more
  setClock(100000 + 1000);
  EXPECT_EQ(passes(udpFrom("192.0.2.4"), 3), 1);
}

// Two global rules ahead of a per-source one: each waits, each is charged once the last
// admitted; a monitor rule among them still only counts what it would refuse.
TEST_F(DeferredGlobalTest, SeveralWaitingRulesAreEachChargedAndAMonitorOneOnlyCounts) {
  RuleSpec watch = globalUdp(1, 1);
  watch.name = "watch";
  watch.action = ExceedAction::kMonitor;
  RuleSpec cap = globalUdp(1, 4);
  cap.name = "cap";
  loadOnTestClock({watch, cap, dnsPerSource(2)});
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 2), 2);  // watch admits one and counts the other
  EXPECT_EQ(passes(udpFrom("192.0.2.1"), 3), 0);  // .1's DNS bucket: 2 of 2
  EXPECT_EQ(passes(udpFrom("192.0.2.2"), 3), 2);  // cap: 4 of 4
  EXPECT_EQ(ruleCount(0, FG_VERDICT_PASS), 1u);
  EXPECT_EQ(ruleCount(0, FG_VERDICT_MONITOR), 7u);
  EXPECT_EQ(ruleCount(1, FG_VERDICT_PASS), 7u);  // the four charged, and .1's three dropped
  EXPECT_EQ(ruleCount(1, FG_VERDICT_DROP), 1u);
  EXPECT_EQ(ruleCount(2, FG_VERDICT_DROP), 3u);
}

// The first two CPUs this thread may run on (fewer if it may not run on two).
std::vector<int> twoAllowedCpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// Runs `frame` `repeat` times in one BPF_PROG_TEST_RUN on CPU `cpu` (the kernel's loop, so
// two CPUs' runs overlap packet by packet); an empty string, or what failed.
std::string runOnCpu(int prog_fd, const std::vector<uint8_t>& frame, int cpu, uint32_t repeat) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); err != 0) {
    return "cannot run on CPU " + std::to_string(cpu) + ": " + strerror(err);
  }
  LIBBPF_OPTS(bpf_test_run_opts, opts);
  opts.data_in = frame.data();
  opts.data_size_in = static_cast<uint32_t>(frame.size());
  opts.repeat = repeat;
  if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) {
    return std::string("BPF_PROG_TEST_RUN failed: ") + strerror(errno);
  }
  return "";
}

// Two CPUs at once, each with its own source's queries behind a global rule on port 53 and
// a per-source rule on all of UDP: the global bucket admits exactly its burst between them,
// its charges waiting for the per-source rule each time. Where both CPUs looked at its last
// room, one charge refuses after all (it happens in most runs): that packet is dropped (or
// only counted, by a monitor rule), counted so and not passed, and what the per-source rule
// took for it is handed back, which each source's bucket, read after, shows to the packet.
class TwoCpusTest : public DeferredGlobalTest {
 protected:
  void expectExactBetweenTwoCpus(ExceedAction action) {
    const std::vector<int> cpus = twoAllowedCpus();
    if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs to run on";
    constexpr uint64_t kBurst = 100'000, kEach = 150'000, kOwn = 200'000;
    RuleSpec cap = globalUdp(1000, kBurst);
    cap.dst_ports = {{53, 53}};
    cap.action = action;
    RuleSpec each = sourceRule(kOwn, kOwn);  // every UDP packet, one bucket per source
    each.name = "each";
    each.protocol = Protocol::kUdp;
    loadOnTestClock({cap, each});
    std::string first_error;
    std::thread first([&] {
      first_error = runOnCpu(loaded_->programFd(), udpFrom("192.0.2.1"), cpus[0], kEach);
    });
    std::string second_error = runOnCpu(loaded_->programFd(), udpFrom("192.0.2.2"), cpus[1], kEach);
    first.join();
    ASSERT_EQ(first_error + second_error, "");
    const uint64_t over = 2 * kEach - kBurst;
    const uint32_t refused =
        action == ExceedAction::kMonitor ? FG_VERDICT_MONITOR : FG_VERDICT_DROP;
    EXPECT_EQ(ruleCount(0, FG_VERDICT_PASS), kBurst);
    EXPECT_EQ(ruleCount(0, refused), over);
    if (action == ExceedAction::kMonitor) {
      // nothing dropped: each source's own bucket paid for all of its queries
      EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 0u);
      EXPECT_EQ(counted(FG_VERDICT_MONITOR, FG_REASON_RATE), over);
      EXPECT_EQ(ruleCount(1, FG_VERDICT_PASS), 2 * kEach);
      return;
    }
    EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), over);
    EXPECT_GE(ruleCount(1, FG_VERDICT_PASS), kBurst);
    // the sources' own buckets hold 2 x kOwn less the kBurst packets that passed
    const uint64_t passed_before = ruleCount(1, FG_VERDICT_PASS);
    ASSERT_EQ(runOnCpu(loaded_->programFd(), ntpFrom("192.0.2.1"), cpus[0], kOwn), "");
    ASSERT_EQ(runOnCpu(loaded_->programFd(), ntpFrom("192.0.2.2"), cpus[0], kOwn), "");
    EXPECT_EQ(ruleCount(1, FG_VERDICT_PASS) - passed_before, 2 * kOwn - kBurst);
  }

  void SetUp() override {
    DeferredGlobalTest::SetUp();
    (void)pthread_getaffinity_np(pthread_self(), sizeof(allowed_), &allowed_);
  }

  void TearDown() override {
    (void)pthread_setaffinity_np(pthread_self(), sizeof(allowed_), &allowed_);
    DeferredGlobalTest::TearDown();
  }

  cpu_set_t allowed_{};
};

TEST_F(TwoCpusTest, GetExactlyTheGlobalBurstBetweenThem) {
  expectExactBetweenTwoCpus(ExceedAction::kDrop);
}

TEST_F(TwoCpusTest, AMonitorRuleCountsExactlyWhatItWouldRefuse) {
  expectExactBetweenTwoCpus(ExceedAction::kMonitor);
}

}  // namespace
}  // namespace floodgate::test
