// SPDX-License-Identifier: MIT
// Priority load shedding: which class is refused at which load, what a shed request is
// answered, who may name a class, and an exact count of requests in flight under races.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "floodgate/core/adaptive_limit.h"
#include "floodgate/core/config_parser.h"
#include "floodgate/core/headers.h"
#include "floodgate/core/limiter.h"

namespace floodgate::http {
namespace {

constexpr int64_t kMs = 1'000'000;

// critical keeps 2 places of 8 for itself; normal is shed at 6, bulk at 3.
constexpr const char* kThreeClasses = R"(http:
  trusted_proxies: [10.0.0.0/8]
  client_header: x-forwarded-for
  shedding:
    retry_after: 3s
    priority_header: x-priority
    classes:
      - name: critical
        max_in_flight: 8
        match:
          - {methods: [POST], path_prefix: /payments}
      - name: normal
        max_in_flight: 6
        default: true
      - name: bulk
        max_in_flight: 3
        match:
          - {path_prefix: /reports}
  policies:
    - name: per-ip
      key: ip
      algorithm: fixed_window
      limit: 1000
      window_ms: 60000
)";

struct Fixture {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(1'000 * kMs);
  std::unique_ptr<Limiter> limiter;

  explicit Fixture(const std::string& yaml, const Limiter* previous = nullptr) {
    auto config = parseHttpConfigText(yaml, "test.yaml");
    EXPECT_TRUE(config.ok()) << config.error().message;
    auto made = Limiter::create(std::move(*config), clock, {}, previous);
    EXPECT_TRUE(made.ok());
    limiter = std::move(*made);
  }

  Verdict check(std::string_view method, std::string_view path, std::string_view peer = "192.0.2.1",
                std::vector<std::pair<std::string_view, std::string_view>> headers = {},
                std::string_view priority = {}) {
    RequestInfo r;
    r.method = method;
    r.path = path;
    r.peer = peer;
    r.headers = std::move(headers);
    r.priority = priority;
    return limiter->check(r);
  }
  Verdict critical() { return check("POST", "/payments"); }
  Verdict normal() { return check("GET", "/items"); }
  Verdict bulk() { return check("GET", "/reports"); }
};

TEST(Shedding, LowerClassesAreShedFirstAsLoadRisesAndServedAgainAsItFalls) {
  Fixture f(kThreeClasses);
  std::vector<Verdict> held;  // requests in flight: each admitted verdict holds its place
  // Which classes a fresh request of each is admitted in, at the load `held` makes.
  auto admitted = [&] {
    std::string out;
    for (auto [name, make] :
         {std::pair{"critical", &Fixture::critical}, std::pair{"normal", &Fixture::normal},
          std::pair{"bulk", &Fixture::bulk}}) {
      Verdict v = (f.*make)();  // dropped at once: in flight only while it is probed
      if (v.allowed()) out += std::string(out.empty() ? "" : ",") + name;
    }
    return out;
  };
  const char* expected[] = {
      "critical,normal,bulk",  // 0 in flight
      "critical,normal,bulk",  // 1
      "critical,normal,bulk",  // 2
      "critical,normal",       // 3: bulk's threshold
      "critical,normal",       // 4
      "critical,normal",       // 5
      "critical",              // 6: normal's
      "critical",              // 7
      "",                      // 8: critical's own, the whole instance
  };
  for (int load = 0; load <= 8; ++load) {
    EXPECT_EQ(admitted(), expected[load]) << load << " in flight";
    f.clock->advanceNs(10 * kMs);
    if (load < 8) held.push_back(f.critical());
    ASSERT_TRUE(held.back().allowed());
    EXPECT_EQ(f.limiter->shedder()->inFlight(), static_cast<int64_t>(held.size()));
  }
  // Falling: bulk is served again once fewer than 3 are in flight.
  while (held.size() > 2) {
    held.pop_back();
    f.clock->advanceNs(10 * kMs);
  }
  EXPECT_EQ(admitted(), "critical,normal,bulk");
  held.clear();
  EXPECT_EQ(f.limiter->shedder()->inFlight(), 0);

  std::vector<PriorityClassStats> stats = f.limiter->shedder()->stats();
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[0].name, "critical");
  EXPECT_EQ(stats[0].shed, 1);  // at 8
  EXPECT_EQ(stats[1].shed, 3);  // at 6, 7, 8
  EXPECT_EQ(stats[2].shed, 6);  // at 3 to 8
  EXPECT_EQ(stats[2].admitted, 4);
}

TEST(Shedding, AShedRequestIsA503SayingOverloadedWithRetryAfterAndTakesNothing) {
  Fixture f(R"(http:
  retry_after_jitter: 0  # the exact wait (jitter: retry_jitter_test.cpp)
  shedding:
    retry_after: 3s
    classes:
      - {name: critical, max_in_flight: 2, match: [{path_prefix: /payments}]}
      - {name: bulk, max_in_flight: 1}
  policies:
    - {name: per-ip, key: ip, algorithm: fixed_window, limit: 5, window_ms: 60000}
)");
  Verdict first = f.check("GET", "/reports");
  ASSERT_TRUE(first.allowed());
  EXPECT_EQ(first.priority, "bulk");
  for (int i = 0; i < 20; ++i) {
    Verdict shed = f.check("GET", "/reports");
    ASSERT_FALSE(shed.allowed());
    EXPECT_EQ(shed.binding.outcome, Outcome::kOverloaded);
    EXPECT_EQ(statusFor(shed), 503);
    EXPECT_FALSE(shed.reportable()) << "overload is not the client's doing";
    EXPECT_FALSE(shed.limited()) << "no policy was asked";
    auto headers = responseHeaders(shed);
    ASSERT_EQ(headers.size(), 1u);
    EXPECT_EQ(headers[0], (std::pair<std::string, std::string>{"Retry-After", "3"}));
    auto body = nlohmann::json::parse(problemJson(shed));
    EXPECT_EQ(body["status"], 503);
    EXPECT_EQ(body["overloaded"], true);
    EXPECT_EQ(body["priority"], "bulk");
    EXPECT_NE(body["detail"].get<std::string>().find("overloaded"), std::string::npos);
  }
  // The 20 shed requests took nothing from the per-IP limit of 5: 4 more are admitted.
  first = {};
  int admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += f.check("GET", "/reports").allowed();
  EXPECT_EQ(admitted, 4);
}

TEST(Shedding, ARequestAPolicyRejectsHoldsNoPlaceInFlight) {
  Fixture f(R"(http:
  shedding:
    classes:
      - {name: critical, max_in_flight: 4, match: [{path_prefix: /payments}]}
      - {name: bulk, max_in_flight: 2}
  policies:
    - {name: per-ip, key: ip, algorithm: fixed_window, limit: 1, window_ms: 60000}
)");
  Verdict admitted = f.check("GET", "/x");
  ASSERT_TRUE(admitted.allowed());
  for (int i = 0; i < 10; ++i) {
    Verdict rejected = f.check("GET", "/x");
    EXPECT_EQ(rejected.binding.outcome, Outcome::kRejected);
    EXPECT_EQ(rejected.in_flight, nullptr);
  }
  EXPECT_EQ(f.limiter->shedder()->inFlight(), 1);
}

// A request that gave its place back to wait out a shaping delay takes it again after, in
// its class, or is shed then with everything it took refunded: it did no work.
TEST(Shedding, ARequestTakingItsPlaceAgainAfterAWaitIsShedIfItsClassIsFull) {
  Fixture f(R"(http:
  retry_after_jitter: 0
  shedding:
    retry_after: 3s
    classes:
      - {name: critical, max_in_flight: 2, match: [{path_prefix: /payments}]}
      - {name: bulk, max_in_flight: 1}
  policies:
    - {name: per-ip, key: ip, algorithm: fixed_window, limit: 5, window_ms: 60000}
)");
  Verdict waiting = f.check("GET", "/reports");
  ASSERT_TRUE(waiting.allowed());
  waiting.in_flight->abandon();
  waiting.in_flight.reset();
  EXPECT_EQ(f.limiter->shedder()->inFlight(), 0);
  Verdict other = f.check("GET", "/other");  // bulk's one place, taken meanwhile
  ASSERT_TRUE(other.allowed());
  EXPECT_FALSE(f.limiter->reenter(waiting));
  EXPECT_EQ(waiting.binding.outcome, Outcome::kOverloaded);
  EXPECT_EQ(statusFor(waiting), 503);
  EXPECT_TRUE(waiting.shed);
  EXPECT_FALSE(waiting.reportable());
  EXPECT_EQ(waiting.in_flight, nullptr);
  EXPECT_EQ(waiting.binding.retry_after_ns, 3'000 * kMs);
  EXPECT_EQ(f.limiter->shedder()->inFlight(), 1);

  other = {};
  Verdict again = f.check("GET", "/reports");
  again.in_flight->abandon();
  again.in_flight.reset();
  EXPECT_TRUE(f.limiter->reenter(again));
  ASSERT_NE(again.in_flight, nullptr);
  EXPECT_EQ(f.limiter->shedder()->inFlight(), 1);
  const PriorityClassStats bulk = f.limiter->shedder()->stats()[1];
  EXPECT_EQ(bulk.admitted, 3) << "each request counted once";
  EXPECT_EQ(bulk.shed, 1);
  again = {};
  // the shed one took nothing: 5 - other - again
  int admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += f.check("GET", "/x").allowed();
  EXPECT_EQ(admitted, 3);
}

TEST(Shedding, OnlyATrustedProxyOrTheServiceNamesAClassAndOnlyAClassItKnows) {
  Fixture f(kThreeClasses);
  using Headers = std::vector<std::pair<std::string_view, std::string_view>>;
  // A client naming its own priority is not believed: GET /reports stays bulk.
  EXPECT_EQ(f.check("GET", "/reports", "192.0.2.1", Headers{{"X-Priority", "critical"}}).priority,
            "bulk");
  // From a trusted proxy, the header names the class.
  EXPECT_EQ(f.check("GET", "/reports", "10.0.0.1", Headers{{"x-priority", " critical "}}).priority,
            "critical");
  // A name that is no class, or two lines (the client's own beside the proxy's), are ignored.
  EXPECT_EQ(f.check("GET", "/reports", "10.0.0.1", Headers{{"x-priority", "root"}}).priority,
            "bulk");
  EXPECT_EQ(f.check("GET", "/reports", "10.0.0.1",
                    Headers{{"x-priority", "critical"}, {"x-priority", "critical"}})
                .priority,
            "bulk");
  // The service's own word comes first; a default covers what nothing matches.
  EXPECT_EQ(
      f.check("GET", "/reports", "10.0.0.1", Headers{{"x-priority", "bulk"}}, "critical").priority,
      "critical");
  EXPECT_EQ(f.check("GET", "/reports", "192.0.2.1", {}, "no-such-class").priority, "bulk");
  EXPECT_EQ(f.check("DELETE", "/payments").priority, "normal");  // the match wants POST
}

// A class matches a request's normal path, as policies do: "//reports" is the bulk route
// the server runs, and "/reports/../payments" the payments one.
TEST(Shedding, AClassMatchesThePathAsSentAndInNormalFormAndTheLowerOneHolds) {
  Fixture f(kThreeClasses);
  for (const char* path : {"//reports", "/./reports/x", "/x/../reports", "reports"}) {
    EXPECT_EQ(f.check("GET", path).priority, "bulk") << path;
  }
  // critical in normal form, but a "/reports/(.*)" route runs it as sent: bulk
  EXPECT_EQ(f.check("POST", "/reports/../payments").priority, "bulk");
  EXPECT_EQ(f.check("POST", "/payments/../reports").priority, "bulk");
  // critical in normal form, no class's as sent (a server's "/payments" route does not run
  // it): the default, never above it
  EXPECT_EQ(f.check("POST", "//payments").priority, "normal");
  EXPECT_EQ(f.check("POST", "/payments").priority, "critical");
}

TEST(Shedding, WithoutAMarkedDefaultAnUnmatchedRequestIsOfTheLowestClass) {
  Fixture f(R"(http:
  shedding:
    classes:
      - {name: critical, max_in_flight: 4, match: [{path_prefix: /payments}]}
      - {name: bulk, max_in_flight: 2}
)");
  EXPECT_EQ(f.check("GET", "/anything").priority, "bulk");
}

TEST(Shedding, ANewPolicySetCountsTheRequestsStillInFlightUnderTheOldOne) {
  Fixture f(kThreeClasses);
  std::vector<Verdict> held;
  for (int i = 0; i < 5; ++i) held.push_back(f.critical());
  Fixture next(kThreeClasses, f.limiter.get());
  EXPECT_EQ(next.limiter->shedder()->inFlight(), 5);
  EXPECT_FALSE(next.bulk().allowed());
  EXPECT_TRUE(next.normal().allowed());
  EXPECT_EQ(next.limiter->shedder()->stats()[0].admitted, 5) << "counts carry over by name";
  f.limiter.reset();  // the old set is gone; its requests still give their places back
  held.clear();
  EXPECT_EQ(next.limiter->shedder()->inFlight(), 0);
  EXPECT_TRUE(next.bulk().allowed());
}

TEST(Shedding, RacingThreadsNeverHoldMorePlacesThanTheThreshold) {
  Fixture f(R"(http:
  shedding:
    classes:
      - {name: critical, max_in_flight: 5, match: [{path_prefix: /payments}]}
      - {name: bulk, max_in_flight: 3}
)");
  // Each round, 8 threads ask at once and hold what they got until all have asked: a check
  // and an increment that are not one step would let a sixth through in some round.
  constexpr int kThreads = 8, kRounds = 5'000;
  std::barrier asked(kThreads), released(kThreads);
  std::atomic<int> admitted_in_round[kRounds] = {};
  std::atomic<int64_t> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        Verdict v = f.check("POST", "/payments");
        if (v.allowed()) {
          ++admitted_in_round[round];
          ++admitted;
        }
        asked.arrive_and_wait();
        v = {};
        released.arrive_and_wait();
      }
    });
  }
  for (auto& t : threads) t.join();
  int most = 0;
  for (const auto& n : admitted_in_round) most = std::max(most, n.load());
  EXPECT_EQ(most, 5) << "never more than the threshold, and it is reached";
  EXPECT_EQ(f.limiter->shedder()->inFlight(), 0);
  int64_t total = 0;
  for (const auto& c : f.limiter->shedder()->stats()) total += c.admitted + c.shed;
  EXPECT_EQ(total, int64_t{kThreads} * kRounds);
  EXPECT_EQ(f.limiter->shedder()->stats()[0].admitted, admitted.load());
}

TEST(Shedding, TurningSheddingOffAndOnAgainForgetsNoRequestInFlight) {
  Fixture on(kThreeClasses);
  std::vector<Verdict> held;
  for (int i = 0; i < 5; ++i) held.push_back(on.critical());
  Fixture off("http:\n  policies: []\n", on.limiter.get());
  EXPECT_EQ(off.limiter->shedder(), nullptr);
  Fixture again(kThreeClasses, off.limiter.get());
  EXPECT_EQ(again.limiter->shedder()->inFlight(), 5);
  EXPECT_FALSE(again.bulk().allowed());
  EXPECT_EQ(again.limiter->shedder()->stats()[0].admitted, 5);
  held.clear();
  EXPECT_EQ(again.limiter->shedder()->inFlight(), 0);
}

TEST(AdaptiveConcurrency, OverTheLimitIsA503AndFinishedRequestsTeachIt) {
  Fixture f(R"(http:
  retry_after_jitter: 0
  adaptive_concurrency:
    {floor: 2, ceiling: 50, initial: 2, window: 10, window_ms: 10, probe_every: 0,
     retry_after: 2s}
)");
  Verdict a = f.check("GET", "/x");
  Verdict b = f.check("GET", "/y");
  ASSERT_TRUE(a.allowed());
  ASSERT_TRUE(b.allowed());
  Verdict over = f.check("GET", "/z");
  EXPECT_EQ(over.binding.outcome, Outcome::kOverloaded);
  EXPECT_EQ(statusFor(over), 503);
  EXPECT_EQ(over.priority, "default");
  EXPECT_EQ(responseHeaders(over),
            (std::vector<std::pair<std::string, std::string>>{{"Retry-After", "2"}}));
  f.clock->advanceNs(kMs);  // every request below takes 1 ms of the stepped clock
  a = {};
  b = {};
  const AdaptiveLimit* adaptive = f.limiter->shedder()->adaptive();
  ASSERT_NE(adaptive, nullptr);
  // Requests that each take 1 ms of the stepped clock, latency flat: the limit grows.
  for (int i = 0; i < 200; ++i) {
    Verdict v = f.check("GET", "/x");
    ASSERT_TRUE(v.allowed()) << i;
    f.clock->advanceNs(kMs);
  }
  EXPECT_EQ(adaptive->noLoadLatencyNs(), kMs);
  const int64_t grown = adaptive->limit();
  EXPECT_GT(grown, 10);
  // Requests that fail (a 5xx the adapter marks): the limit shrinks whatever the latency.
  for (int i = 0; i < 100; ++i) {
    Verdict v = f.check("GET", "/x");
    ASSERT_TRUE(v.allowed()) << i;
    v.in_flight->failed();
    f.clock->advanceNs(kMs);
  }
  EXPECT_LT(adaptive->limit(), grown * 3 / 4);
}

// A refused request did no work: its few microseconds are no latency sample. A flood of
// refusals (an exhausted key, a repeated key header) must not teach the limit a no-load
// latency of nothing, which would switch overload protection off.
TEST(AdaptiveConcurrency, RefusedRequestsTeachItNothing) {
  Fixture f(R"(http:
  adaptive_concurrency:
    {floor: 2, ceiling: 50, initial: 10, window: 10, window_ms: 10, probe_every: 0}
  policies:
    - {name: per-ip, key: ip, algorithm: fixed_window, limit: 60, window_ms: 600000}
)");
  const AdaptiveLimit* adaptive = f.limiter->shedder()->adaptive();
  ASSERT_NE(adaptive, nullptr);
  for (int i = 0; i < 60; ++i) {  // five windows and more: the no-load latency is known
    Verdict v = f.check("GET", "/x");
    ASSERT_TRUE(v.allowed()) << i;
    f.clock->advanceNs(kMs);  // each takes 1 ms
  }
  ASSERT_EQ(adaptive->noLoadLatencyNs(), kMs);
  for (int i = 0; i < 200; ++i) {
    Verdict refused = f.check("GET", "/x");  // over the per-IP limit, in no time
    ASSERT_EQ(refused.binding.outcome, Outcome::kRejected) << i;
    if (i % 10 == 9) f.clock->advanceNs(10 * kMs);  // windows close
  }
  EXPECT_EQ(adaptive->noLoadLatencyNs(), kMs);
}

// Every other window a probe (probe_every: 1), each of 4 requests, at a floor of 2.
constexpr const char* kProbing = R"(http:
  adaptive_concurrency:
    {floor: 2, ceiling: 50, initial: 10, window: 4, window_ms: 1, probe_every: 1}
)";

// A window of 4 requests of 1 ms each: the next window is a probe.
void runWindowBeforeAProbe(Fixture& f) {
  for (int i = 0; i < 4; ++i) {
    Verdict v = f.check("GET", "/x");
    ASSERT_TRUE(v.allowed()) << i;
    f.clock->advanceNs(kMs);
  }
}

// A probe window runs at the floor, and measures only what it admitted: the requests from
// before it are not its to count either. Counted, `floor` of them held open (slow uploads
// trickling a byte at a time) would fill the floor, every other request would be shed, and
// the probe, which ends only when requests it admitted finish, would never end.
TEST(AdaptiveConcurrency, RequestsHeldFromBeforeAProbeNeitherFillItsFloorNorKeepItRunning) {
  Fixture f(kProbing);
  const AdaptiveLimit* adaptive = f.limiter->shedder()->adaptive();
  ASSERT_NE(adaptive, nullptr);
  std::vector<Verdict> held;  // the attacker's, admitted before the probe
  for (int i = 0; i < 2; ++i) {
    held.push_back(f.check("POST", "/upload"));
    ASSERT_TRUE(held.back().allowed());
  }
  runWindowBeforeAProbe(f);
  ASSERT_EQ(adaptive->probes(), 1u);
  ASSERT_EQ(adaptive->limit(), 2) << "the probe runs at the floor";

  // the probe admits up to the floor of its own, beside the two held
  std::vector<Verdict> probed;
  for (int i = 0; i < 2; ++i) {
    probed.push_back(f.check("GET", "/x"));
    EXPECT_TRUE(probed.back().allowed()) << i;
  }
  EXPECT_EQ(f.check("GET", "/x").binding.outcome, Outcome::kOverloaded) << "its floor is full";
  f.clock->advanceNs(kMs);
  probed.clear();
  for (int i = 0; i < 2; ++i) {  // its window fills: it ends, the held ones still held
    Verdict v = f.check("GET", "/x");
    ASSERT_TRUE(v.allowed()) << i;
    f.clock->advanceNs(kMs);
  }
  EXPECT_EQ(adaptive->limit(), 10) << "the probe has ended";
  EXPECT_TRUE(f.check("GET", "/x").allowed());
}

// Requests a probe admitted and that are held open (slow uploads opened as it began) keep
// its floor full, but not for longer than its time limit: then it ends unmeasured, the limit
// as it was, and the requests it shed are served again.
TEST(AdaptiveConcurrency, RequestsHeldInAProbeKeepItNoLongerThanItsTimeLimit) {
  Fixture f(kProbing);
  const AdaptiveLimit* adaptive = f.limiter->shedder()->adaptive();
  ASSERT_NE(adaptive, nullptr);
  runWindowBeforeAProbe(f);
  ASSERT_EQ(adaptive->probes(), 1u);
  std::vector<Verdict> held;  // the attacker's, admitted in the probe and never finished
  for (int i = 0; i < 2; ++i) {
    held.push_back(f.check("POST", "/upload"));
    ASSERT_TRUE(held.back().allowed());
  }
  EXPECT_EQ(f.check("GET", "/x").binding.outcome, Outcome::kOverloaded);
  f.clock->advanceNs(adaptive->probeTimeLimitNs());
  EXPECT_EQ(f.check("GET", "/x").binding.outcome, Outcome::kOverloaded) << "not yet past it";
  f.clock->advanceNs(1);
  EXPECT_TRUE(f.check("GET", "/x").allowed()) << "the probe ended unmeasured";
  EXPECT_EQ(adaptive->limit(), 10);
  EXPECT_EQ(adaptive->probes(), 1u);
}

// The time limit is on a probe's progress, not its length: a slow service whose probe
// requests keep finishing, each under the limit, is measured however long its window takes.
TEST(AdaptiveConcurrency, AProbeWhoseRequestsKeepFinishingRunsPastTheTimeLimit) {
  Fixture f(kProbing);
  const AdaptiveLimit* adaptive = f.limiter->shedder()->adaptive();
  ASSERT_NE(adaptive, nullptr);
  runWindowBeforeAProbe(f);
  ASSERT_EQ(adaptive->probes(), 1u);
  ASSERT_EQ(adaptive->noLoadLatencyNs(), 0);
  const int64_t slow = adaptive->probeTimeLimitNs() * 9 / 10;
  for (int i = 0; i < 4; ++i) {  // 4 requests of 0.9 limits each: 3.6 limits in all
    Verdict v = f.check("GET", "/x");
    ASSERT_TRUE(v.allowed()) << i;
    f.clock->advanceNs(slow);
  }
  EXPECT_EQ(adaptive->noLoadLatencyNs(), slow) << "the probe measured its window";
  EXPECT_EQ(adaptive->limit(), 10);
}

TEST(AdaptiveConcurrency, ClassThresholdsFollowTheLimitAndKeepTheirShares) {
  Fixture f(R"(http:
  adaptive_concurrency: {floor: 2, ceiling: 500, initial: 40}
  shedding:
    classes:
      - {name: critical, max_in_flight: 100, match: [{path_prefix: /payments}]}
      - {name: normal, max_in_flight: 75, default: true}
      - {name: bulk, max_in_flight: 25, match: [{path_prefix: /reports}]}
)");
  const Shedder& shedder = *f.limiter->shedder();
  EXPECT_EQ(shedder.threshold(0), 40);  // the adaptive limit itself
  EXPECT_EQ(shedder.threshold(1), 30);  // three quarters of it
  EXPECT_EQ(shedder.threshold(2), 10);  // a quarter
  std::vector<Verdict> held;
  for (int i = 0; i < 10; ++i) held.push_back(f.bulk());
  EXPECT_FALSE(f.bulk().allowed());
  EXPECT_TRUE(f.normal().allowed());
}

}  // namespace
}  // namespace floodgate::http
