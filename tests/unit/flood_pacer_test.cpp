// SPDX-License-Identifier: MIT
// The flood pacer and send loop against a fake kernel on a virtual clock: the rate holds
// and an unpaced flood goes as fast as the calls allow, whatever one call costs and however
// late a sleep wakes.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "flood/pacer.h"
#include "flood/send_loop.h"

namespace floodgate::flood {
namespace {

constexpr uint64_t kSecond = 1'000'000'000ULL;
constexpr uint64_t kMs = 1'000'000ULL;

// A machine: what a call costs (fixed, per frame) and how late a sleep wakes.
struct Machine {
  uint64_t call_fixed_ns;
  double frame_ns;
  uint64_t sleep_overshoot_ns;
  // Every call after the first two costs this many times the fixed part: a machine whose
  // other work takes the CPU from every call alike, once it is under way.
  double contention = 1.0;
};
void PrintTo(const Machine& m, std::ostream* os) {
  *os << "calls of " << m.call_fixed_ns << " ns + " << m.frame_ns << " ns/frame";
}
// seen on one VM: 25 ms a call whatever it carries, 6 Mpps within it, a 10 µs sleep 110 µs
constexpr Machine kSlowCalls{25 * kMs, 160, 100'000};
constexpr Machine kFastCalls{10'000, 100, 50'000};
// seen on a VM at load 7 on 2 cores: the smallest call 23 ms, most of them six times that
constexpr Machine kContendedCalls{4 * kMs, 160, 100'000, 6.0};

// The kernel and the clock, simulated: time moves only by sleeping and by calls.
class FakeDriver final : public SendDriver {
 public:
  explicit FakeDriver(Machine machine) : machine_(machine) {}
  uint64_t nowNs() override { return now_ns_; }
  void sleepNs(uint64_t ns) override { now_ns_ += ns + machine_.sleep_overshoot_ns; }
  // A signal cuts short the call during which the `frames`th frame would go: it ends with
  // the frames before that one gone.
  void signalAtFrame(uint64_t frames) { signal_at_ = frames; }
  // The first call is preempted: its fixed part takes `ns` longer.
  void stallFirstCall(uint64_t ns) { first_call_stall_ns_ = ns; }
  Result<uint64_t> send(uint64_t frames) override {
    if (signal_at_ != 0 && total_ + frames >= signal_at_) frames = signal_at_ - 1 - total_;
    // the fixed part wanders: 0.7x to 1.3x, from a fixed pseudo-random sequence
    jitter_ = jitter_ * 6364136223846793005ULL + 1442695040888963407ULL;
    const double wander = 0.7 + 0.6 * static_cast<double>(jitter_ >> 11) / (1ULL << 53);
    // the fixed part first, then the frames go out one after another
    const uint64_t stall_ns = calls_.empty() ? first_call_stall_ns_ : 0;
    const double contention = calls_.size() < 2 ? 1.0 : machine_.contention;
    const uint64_t start_ns = now_ns_;
    const uint64_t frames_from =
        now_ns_ + stall_ns + static_cast<uint64_t>(machine_.call_fixed_ns * wander * contention);
    now_ns_ = frames_from + static_cast<uint64_t>(machine_.frame_ns * frames);
    calls_.push_back({start_ns, frames_from, now_ns_, total_, total_ + frames});
    total_ += frames;
    return frames;
  }
  uint64_t total() const { return total_; }
  // Frames gone in (from, to].
  double deliveredBetween(uint64_t from_ns, uint64_t to_ns) const {
    return totalAt(to_ns) - totalAt(from_ns);
  }
  uint64_t startNs() const { return kStartNs; }
  uint64_t firstCallEndNs() const { return calls_.empty() ? 0 : calls_.front().end; }
  uint64_t secondCallNs() const { return calls_.size() < 2 ? 0 : calls_[1].end - calls_[1].start; }
  uint64_t firstCallFrames() const { return calls_.empty() ? 0 : calls_.front().after; }
  uint64_t firstFrameNs() const { return calls_.empty() ? 0 : calls_.front().frames_from; }
  uint64_t lastFrameNs() const { return calls_.empty() ? 0 : calls_.back().end; }
  double singleCallPps() const { return kSecond / machine_.frame_ns; }

 private:
  struct Call {
    uint64_t start;
    uint64_t frames_from, end;  // its frames went out evenly over [frames_from, end]
    uint64_t before, after;     // frames gone before it and after it
  };
  double totalAt(uint64_t at_ns) const {
    auto call = std::upper_bound(calls_.begin(), calls_.end(), at_ns,
                                 [](uint64_t at, const Call& c) { return at < c.frames_from; });
    if (call == calls_.begin()) return 0;
    --call;
    if (at_ns >= call->end) return static_cast<double>(call->after);
    return static_cast<double>(call->before) +
           static_cast<double>(call->after - call->before) *
               static_cast<double>(at_ns - call->frames_from) /
               static_cast<double>(call->end - call->frames_from);
  }
  static constexpr uint64_t kStartNs = 1'000 * kSecond;  // an arbitrary origin
  Machine machine_;
  uint64_t now_ns_ = kStartNs;
  uint64_t first_call_stall_ns_ = 0;
  uint64_t total_ = 0;
  uint64_t signal_at_ = 0;  // 0: no signal
  uint64_t jitter_ = 1;
  std::vector<Call> calls_;
};

SendOutcome run(FakeDriver& driver, uint64_t rate_pps, SendLimits limits, uint32_t batch = 64) {
  Pacer pacer(rate_pps, limits.duration_ns, batch);
  auto outcome = runSendLoop(pacer, limits, driver, nullptr);
  EXPECT_TRUE(outcome.ok());
  return outcome.ok() ? *outcome : SendOutcome{};
}

double ratePps(const SendOutcome& outcome) {
  return static_cast<double>(outcome.sent) * kSecond / static_cast<double>(outcome.elapsed_ns);
}

// Every one-second window, every 10 ms from `from_ns` (the first frame by default), carries
// the rate.
void expectEverySecondHolds(const FakeDriver& driver, uint64_t rate_pps, double tolerance,
                            uint64_t from_ns = 0) {
  int windows = 0;
  for (uint64_t from = std::max(from_ns, driver.firstFrameNs());
       from + kSecond <= driver.lastFrameNs(); from += 10 * kMs) {
    const double in_window = driver.deliveredBetween(from, from + kSecond);
    EXPECT_NEAR(in_window / static_cast<double>(rate_pps), 1.0, tolerance)
        << "from " << from - driver.firstFrameNs() << " ns";
    ++windows;
  }
  EXPECT_GT(windows, 0);
}

class PacedOnBothMachines : public ::testing::TestWithParam<std::tuple<Machine, uint64_t>> {};

TEST_P(PacedOnBothMachines, HoldsTheRateOverEverySecond) {
  const auto [machine, rate] = GetParam();
  FakeDriver driver(machine);
  SendOutcome outcome = run(driver, rate, {0, 3 * kSecond});
  EXPECT_FALSE(outcome.interrupted);
  EXPECT_NEAR(ratePps(outcome) / static_cast<double>(rate), 1.0, 0.02)
      << outcome.sent << " frames in " << outcome.elapsed_ns << " ns";
  // Where calls become six times dearer from the third on, the pacer learns the new cost
  // from the calls that follow: the rate holds in every second from the moment it has, the
  // whole run's rate (above) from the start.
  const uint64_t settled_ns = machine.contention > 1 ? driver.firstFrameNs() + 500 * kMs : 0;
  expectEverySecondHolds(driver, rate, 0.05, settled_ns);
}

INSTANTIATE_TEST_SUITE_P(Rates, PacedOnBothMachines,
                         ::testing::Combine(::testing::Values(kSlowCalls, kFastCalls,
                                                              kContendedCalls),
                                            ::testing::Values(1'000ULL, 50'000ULL, 200'000ULL,
                                                              1'000'000ULL, 4'000'000ULL)));

TEST(FloodPacer, ACountAtARateTakesCountOverRateOnSlowCalls) {
  FakeDriver driver(kSlowCalls);
  SendOutcome outcome = run(driver, 100'000, {50'000, 0});
  EXPECT_EQ(outcome.sent, 50'000u);
  EXPECT_NEAR(ratePps(outcome) / 100'000, 1.0, 0.05);
}

TEST(FloodPacer, ACountAtARateTakesCountOverRateOnContendedCalls) {
  FakeDriver driver(kContendedCalls);
  SendOutcome outcome = run(driver, 100'000, {100'000, 0});
  EXPECT_EQ(outcome.sent, 100'000u);
  EXPECT_NEAR(ratePps(outcome) / 100'000, 1.0, 0.05);
}

TEST(FloodPacer, UnpacedReachesNineTenthsOfOneLongCallOnSlowCalls) {
  FakeDriver driver(kSlowCalls);
  SendOutcome outcome = run(driver, 0, {0, kSecond});
  EXPECT_GE(ratePps(outcome), 0.9 * driver.singleCallPps());
  // and ends close to on time
  EXPECT_LT(outcome.elapsed_ns, kSecond + 30 * kMs);
  FakeDriver counted(kSlowCalls);
  SendOutcome by_count = run(counted, 0, {5'000'000, 0});
  EXPECT_EQ(by_count.sent, 5'000'000u);
  EXPECT_GE(ratePps(by_count), 0.9 * counted.singleCallPps());
}

TEST(FloodPacer, UnpacedReachesNineTenthsOfOneLongCallOnFastCalls) {
  FakeDriver driver(kFastCalls);
  SendOutcome outcome = run(driver, 0, {0, kSecond});
  EXPECT_GE(ratePps(outcome), 0.9 * driver.singleCallPps());
}

TEST(FloodPacer, TheFirstCallIsOneBatch) {
  FakeDriver driver(kSlowCalls);
  run(driver, 0, {1'000'000, 0}, 32);
  EXPECT_EQ(driver.firstCallFrames(), 32u);
}

TEST(FloodPacer, ARateBeyondTheMachineIsSeenAsOutOfReach) {
  FakeDriver driver(kSlowCalls);  // 6.25 Mpps at most
  Pacer pacer(20'000'000, kSecond, 64);
  auto outcome = runSendLoop(pacer, {0, kSecond}, driver, nullptr);
  ASSERT_TRUE(outcome.ok());
  EXPECT_LT(ratePps(*outcome), 0.95 * 20'000'000);
  // as much as it can, and still within the duration
  EXPECT_GE(ratePps(*outcome), 0.85 * driver.singleCallPps());
  EXPECT_LT(outcome->elapsed_ns, kSecond + 40 * kMs);
  EXPECT_NEAR(pacer.reachablePps() / driver.singleCallPps(), 1.0, 0.05);
  // the smallest call seen, and the per-frame part within 10% despite the wandering
  EXPECT_GE(pacer.cost().fixedNs(), 0.7 * 25 * kMs);
  EXPECT_LE(pacer.cost().fixedNs(), 1.3 * 25 * kMs);
  EXPECT_NEAR(pacer.cost().perFrameNs(), 160, 16);
}

TEST(FloodPacer, AStallIsCaughtUpInBoundedChunks) {
  Pacer pacer(1000, 0, 64);
  pacer.observe(1, 10'000);  // calls cost 10 µs
  EXPECT_EQ(pacer.waitNs(0, 0), 1'000'000u) << "one call's cost leads nothing";
  pacer.observe(1, 10'000);  // confirmed
  EXPECT_EQ(pacer.next(0, 0), 0u);
  EXPECT_EQ(pacer.waitNs(0, 0), 1'000'000u - 10'000u);
  EXPECT_EQ(pacer.next(990'000, 0), 1u);
  // behind by a second: at most 2 ms of the rate in one call, never the whole backlog
  EXPECT_EQ(pacer.next(kSecond, 10), 2u);
}

// A first call preempted for half a second costs what no later call does. The frames due
// in that half second go late, and are caught up in bounded chunks; none goes early, and
// once caught up every second carries the rate.
class AStalledFirstCall : public ::testing::TestWithParam<Machine> {};

TEST_P(AStalledFirstCall, NeitherLeadsNorLagsTheRate) {
  const Machine machine = GetParam();
  const uint64_t rate = 100'000;
  FakeDriver driver(machine);
  driver.stallFirstCall(500 * kMs);
  SendOutcome outcome = run(driver, rate, {0, 3 * kSecond});
  EXPECT_NEAR(ratePps(outcome) / static_cast<double>(rate), 1.0, 0.02)
      << outcome.sent << " frames in " << outcome.elapsed_ns << " ns";
  // Frame k is due k / rate after the start. A call's frames go at its end, so they are
  // handed over early by the smallest cost of two calls or more (the lead that sends them
  // on time): at most what the second call cost, the one that carried the stall's backlog.
  // And a chunk carries at most 2 ms of the rate or four calls' cost of it.
  const double call_ns = 1.3 * static_cast<double>(machine.call_fixed_ns);
  const double lead_ns = static_cast<double>(driver.secondCallNs());
  const double slack_frames = rate * (lead_ns + std::max(2e6, 4 * call_ns)) / kSecond + 1;
  // caught up within a few chunks of calls after the stall ends
  const uint64_t caught_up_ns = driver.firstCallEndNs() + 100 * kMs + 10 * machine.call_fixed_ns;
  for (uint64_t at = driver.startNs(); at <= driver.lastFrameNs(); at += kMs) {
    const double due = static_cast<double>(at - driver.startNs()) * rate / kSecond;
    const double gone = driver.deliveredBetween(driver.startNs(), at);
    ASSERT_LE(gone, due + slack_frames) << "ahead " << (at - driver.startNs()) / kMs << " ms in";
    if (at >= caught_up_ns) {
      ASSERT_GE(gone, due - slack_frames) << "behind " << (at - driver.startNs()) / kMs << " ms in";
    }
  }
  expectEverySecondHolds(driver, rate, 0.05, caught_up_ns);

  // a count at a rate still takes count / rate
  FakeDriver counted(machine);
  counted.stallFirstCall(500 * kMs);
  SendOutcome by_count = run(counted, rate, {100'000, 0});
  EXPECT_EQ(by_count.sent, 100'000u);
  EXPECT_NEAR(ratePps(by_count) / static_cast<double>(rate), 1.0, 0.02)
      << by_count.sent << " frames in " << by_count.elapsed_ns << " ns";
}

INSTANTIATE_TEST_SUITE_P(Machines, AStalledFirstCall, ::testing::Values(kSlowCalls, kFastCalls));

TEST(FloodPacer, AStopRequestEndsTheLoop) {
  FakeDriver driver(kFastCalls);
  Pacer pacer(1000, 0, 64);
  std::atomic<bool> stop{true};
  auto outcome = runSendLoop(pacer, {0, 10 * kSecond}, driver, &stop);
  ASSERT_TRUE(outcome.ok());
  EXPECT_TRUE(outcome->interrupted);
  EXPECT_EQ(outcome->sent, 0u);
}

TEST(FloodPacer, FramesOfACallASignalCutShortAreCounted) {
  for (uint64_t signal_at : {1ULL, 2ULL, 65ULL, 1000ULL, 12273ULL}) {
    FakeDriver driver(kFastCalls);
    driver.signalAtFrame(signal_at);
    SendOutcome outcome = run(driver, 0, {0, 10 * kSecond});
    EXPECT_TRUE(outcome.interrupted) << signal_at;
    EXPECT_EQ(outcome.sent, signal_at - 1) << "what the peer took";
    EXPECT_EQ(outcome.sent, driver.total());
  }
}

}  // namespace
}  // namespace floodgate::flood
