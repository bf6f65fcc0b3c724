// SPDX-License-Identifier: MIT
// ShapingDemand: which refusals of a shaping wait are the client's excess (reportable) and
// which only the server's bound, on a clock the test steps by hand.
#include "floodgate/core/shaping_demand.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "floodgate/core/config_parser.h"

namespace floodgate::http {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000 * kMs;

// A queue per client address, 10 s deep (100 at 10/s), and one per API key of the same size.
constexpr const char* kQueues = R"(http:
  retry_after_jitter: 0
  policies:
    - {name: per-ip-queue, key: ip, algorithm: leaky_bucket, capacity: 100, rate_per_s: 10,
       match: {path_prefix: /ip}}
    - {name: per-key-queue, key: header:X-API-Key, algorithm: leaky_bucket, capacity: 100,
       rate_per_s: 10, match: {path_prefix: /key}}
)";

// The limiter with the adapter's rule for waits (httplib_adapter.cpp) and no thread bound:
// a request whose wait is beyond max_delay (1 s) is refused and refunded, reportable when
// its client's demand did not fit it.
class ShapedService {
 public:
  explicit ShapedService(ShapingDemand& demand) : demand_(demand) {
    auto config = parseHttpConfigText(kQueues, "test.yaml");
    EXPECT_TRUE(config.ok()) << config.error().message;
    auto made = Limiter::create(std::move(*config), clock_);
    EXPECT_TRUE(made.ok());
    limiter_ = std::move(*made);
  }

  Verdict send(std::string_view path, std::string_view peer, std::string_view api_key = "k1") {
    RequestInfo request;
    request.method = "GET";
    request.path = path;
    request.peer = peer;
    request.headers = {{"X-API-Key", api_key}};
    Verdict verdict = limiter_->check(request);
    if (!verdict.allowed()) return verdict;
    const bool excess = demand_.offer(verdict).excess;
    if (excess) ++excess_;
    if (verdict.binding.delay_ns > kMaxDelayNs) {
      limiter_->refund(verdict);
      verdict.binding.outcome = Outcome::kRejected;
      verdict.delay_refused = true;
      verdict.delay_excess = excess;
    }
    return verdict;
  }
  ManualClock& clock() { return *clock_; }
  // Requests the demand did not fit, refused or not.
  int excess() const { return excess_; }

 private:
  static constexpr int64_t kMaxDelayNs = kS;
  ShapingDemand& demand_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(1'000 * kS);
  std::unique_ptr<Limiter> limiter_;
  std::atomic<int> excess_{0};
};

struct Tally {
  int admitted = 0;
  int refused = 0;
  int reportable = 0;
  void add(const Verdict& verdict) {
    if (verdict.allowed()) {
      ++admitted;
      return;
    }
    ++refused;
    if (verdict.reportable()) ++reportable;
  }
};

// A page loading 60 calls at once fills 6 s of a 10 s queue: the server refuses 49 of them
// for a wait beyond its max_delay, but the client is within what the policy gives it. So is
// a second page after the first has drained, and a burst of the queue's whole capacity.
TEST(ShapingDemand, AnHonestPageLoadBurstIsNeverReportable) {
  ShapingDemand demand;
  ShapedService service(demand);
  for (int page = 0; page < 3; ++page) {
    Tally tally;
    for (int i = 0; i < 60; ++i) tally.add(service.send("/ip", "198.51.100.7"));
    EXPECT_EQ(tally.admitted, 11) << page;  // waits of 0 to 1 s
    EXPECT_EQ(tally.refused, 49) << page;
    EXPECT_EQ(tally.reportable, 0) << page;
    service.clock().advanceNs(6 * kS);  // the page's 60 have drained from its demand
  }
  service.clock().advanceNs(60 * kS);
  Tally whole;
  for (int i = 0; i < 100; ++i) whole.add(service.send("/ip", "198.51.100.7"));
  EXPECT_EQ(whole.refused, 89);
  EXPECT_EQ(whole.reportable, 0) << "the queue's whole capacity at once is still within it";
  // One more is beyond it: the queue itself would have refused it, had the server held all.
  Verdict over = service.send("/ip", "198.51.100.7");
  EXPECT_TRUE(over.delay_refused);
  EXPECT_TRUE(over.reportable());
}

// A client asking 25 a second of a queue draining 10 a second: its demand is full after
// about 100 / 15 s, and from then on all it asks beyond the 10 a second is reportable.
TEST(ShapingDemand, ASustainedFloodPastCapacityBecomesReportable) {
  ShapingDemand demand;
  ShapedService service(demand);
  std::vector<Tally> seconds(30);
  for (int second = 0; second < 30; ++second) {
    for (int i = 0; i < 25; ++i) {
      seconds[second].add(service.send("/ip", "203.0.113.9"));
      service.clock().advanceNs(40 * kMs);
    }
  }
  for (int second = 0; second < 6; ++second) {
    EXPECT_EQ(seconds[second].reportable, 0) << "still within the capacity, at " << second;
    EXPECT_GT(seconds[second].refused, 0) << "the server would not hold the wait";
  }
  for (int second = 8; second < 30; ++second) {
    EXPECT_EQ(seconds[second].admitted + seconds[second].refused, 25);
    // 10 a second drain from its demand: the other 15 are beyond what the policy gives
    EXPECT_NEAR(seconds[second].reportable, 15, 1) << second;
  }
}

// A client pacing itself at the queue's rate after filling it is within the policy forever;
// the same client a little faster is found out once its extra has filled the queue.
TEST(ShapingDemand, PacingAtTheRateIsNeverReportableAndJustOverItIsInTheEnd) {
  ShapingDemand demand;
  ShapedService service(demand);
  Tally at_rate;
  for (int i = 0; i < 100; ++i) at_rate.add(service.send("/ip", "192.0.2.1"));  // full
  for (int i = 0; i < 600; ++i) {  // a minute at 10 a second
    service.clock().advanceNs(100 * kMs);
    at_rate.add(service.send("/ip", "192.0.2.1"));
  }
  EXPECT_EQ(at_rate.reportable, 0);

  // Another client at 11 a second: refused for its wait once a second from early on, but
  // its extra one a second fills the queue's 100 only after 100 s; then it is beyond.
  Tally first_90s, after;
  for (int i = 0; i < 11 * 120; ++i) {
    service.clock().advanceNs(kS / 11);
    (i < 11 * 90 ? first_90s : after).add(service.send("/ip", "192.0.2.2"));
  }
  EXPECT_GT(first_90s.refused, 70);
  EXPECT_EQ(first_90s.reportable, 0);
  EXPECT_GE(after.reportable, 15);
  EXPECT_LE(after.reportable, 25) << "only what it asked beyond the rate and capacity";
}

// On a queue many clients share (an API key), each address is measured alone: many
// addresses together past the queue's capacity are the key's excess, not any one's; one
// address alone past it is its own.
TEST(ShapingDemand, OnASharedQueueOnlyAnAddressThatAloneAsksTooMuchIsReportable) {
  ShapingDemand demand;
  ShapedService service(demand);
  Tally spread;
  for (int i = 0; i < 150; ++i) {
    spread.add(service.send("/key", "198.51.100." + std::to_string(1 + i % 10), "partner"));
  }
  EXPECT_EQ(spread.refused, 139);
  EXPECT_EQ(spread.reportable, 0) << "15 each: no address asked for more than the queue gives";

  service.clock().advanceNs(60 * kS);
  Tally alone;
  for (int i = 0; i < 150; ++i) alone.add(service.send("/key", "203.0.113.50", "partner"));
  EXPECT_EQ(alone.reportable, 50) << "one address asking 150 of a queue that gives 100";
}

// A refusal for want of any free thread (shed) is other clients' doing: never reportable,
// whatever the client's demand says.
TEST(ShapingDemand, AShedRefusalIsNeverReportable) {
  ShapingDemand demand;
  ShapedService service(demand);
  for (int i = 0; i < 100; ++i) service.send("/ip", "198.51.100.7");
  Verdict beyond = service.send("/ip", "198.51.100.7");
  ASSERT_TRUE(beyond.reportable());
  beyond.shed = true;
  EXPECT_FALSE(beyond.reportable());
}

// Each address a client rotates through costs a pair, but the pairs held stay within the
// bound, and its short-lived pairs push out one another, not a flooder's busy one.
TEST(ShapingDemand, RotatingAddressesKeepsMemoryBoundedAndAFlooderCounted) {
  constexpr int64_t kMaxKeys = 64;
  ShapingDemand demand(kMaxKeys, 4);
  ShapedService service(demand);
  for (int i = 0; i < 100; ++i) service.send("/ip", "203.0.113.9");  // the flooder's queue full
  Tally flooder;  // twice the rate: one a round drains, the other is beyond
  for (int i = 0; i < 20'000; ++i) {
    service.send("/ip", "10." + std::to_string(i / 65536 % 256) + "." +
                            std::to_string(i / 256 % 256) + "." + std::to_string(i % 256));
    if (i % 100 == 0) {
      flooder.add(service.send("/ip", "203.0.113.9"));
      flooder.add(service.send("/ip", "203.0.113.9"));
    }
    service.clock().advanceNs(kMs);
    ASSERT_LE(demand.keys("per-ip-queue"), kMaxKeys) << i;
  }
  // Forgotten, its demand would start empty and 100 of its requests would go unreported.
  EXPECT_GE(flooder.refused, 200);
  EXPECT_GE(flooder.reportable, 195) << "its demand was kept full through the rotation";
}

// The server's threads decide at once: each request of the client is counted once, so 400
// of one client against a capacity of 100, all at one instant, are exactly 300 in excess.
TEST(ShapingDemand, ConcurrentRequestsAreEachCountedOnce) {
  ShapingDemand demand;
  ShapedService service(demand);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) service.send("/ip", "198.51.100.7");
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(service.excess(), 300);
  EXPECT_EQ(demand.keys("per-ip-queue"), 1);
}

// A clock reading older than one the demand has seen (another thread's stale read) gives
// the client nothing back: its demand does not drain backwards.
TEST(ShapingDemand, AClockGoingBackwardsDrainsNothing) {
  ShapingDemand demand;
  ShapedService service(demand);
  for (int i = 0; i < 100; ++i) service.send("/ip", "198.51.100.7");
  service.clock().advanceNs(-5 * kS);
  EXPECT_TRUE(service.send("/ip", "198.51.100.7").reportable());
}

}  // namespace
}  // namespace floodgate::http
