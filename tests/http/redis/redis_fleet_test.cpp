// SPDX-License-Identifier: MIT
// A fleet against one key: several processes with several threads each never exceed the
// limit, with and without hot-key prefetch; leases go back on shutdown; and the sharing
// lab's figures are the prefetch store's.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "floodgate/core/limiter.h"
#include "floodgate/redis/failover_store.h"
#include "floodgate/redis/prefetch_store.h"
#include "floodgate/redis/redis_store.h"
#include "floodgate/stores/circuit_breaker.h"
#include "lab/sharing.h"
#include "redis/redis_fixture.h"

namespace floodgate::http {
namespace {

using testing::RedisServer;

constexpr int kProcesses = 4;
constexpr int kThreads = 4;
constexpr int kRequestsPerThread = 60;  // 960 in all, against limits of 200

class RedisFleetTest : public testing::RedisServerTest {
 protected:
  static std::shared_ptr<redis::Client> newClient() { return RedisServerTest::newClient(kThreads); }
  // A client of 4 connections whose calls give up after `timeout_ms`.
  static std::shared_ptr<redis::Client> clientWithTimeout(int timeout_ms) {
    redis::ClientOptions options;
    options.seeds = {server_->address()};
    options.timeout_ms = timeout_ms;
    options.pool_size = 4;
    return std::make_shared<redis::Client>(options);
  }
};

AlgorithmParams params(AlgorithmKind kind) {
  AlgorithmParams p;
  p.kind = kind;
  // Windows far longer than the test, and buckets that refill nothing meanwhile (one unit
  // per 1000 s), so "the limit" is exactly 200 admitted and no timing can change it.
  p.limit = 200;
  p.window_ms = 600'000;
  p.capacity = 200;
  p.rate_per_s = 0.001;
  return p;
}

// Runs kProcesses processes of kThreads threads, each deciding on one shared key through
// a store made by `make` in that process; returns the total admitted.
template <class MakeStore>
int64_t admittedByFleet(MakeStore make) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      std::unique_ptr<Store> store = make();
      std::atomic<int64_t> admitted{0};
      std::atomic<int64_t> errors{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
          for (int i = 0; i < kRequestsPerThread; ++i) {
            auto d = store->decide("shared-key", 0, 1);
            if (!d) errors.fetch_add(1);
            if (d && d->allowed()) admitted.fetch_add(1);
          }
        });
      }
      for (auto& t : threads) t.join();
      store.reset();  // a prefetch store gives its unspent lease back here
      int64_t result[2] = {admitted.load(), errors.load()};
      ssize_t n = write(fds[1], result, sizeof(result));
      _exit(n == sizeof(result) ? 0 : 1);
    }
    children.push_back(pid);
  }
  close(fds[1]);
  int64_t total = 0;
  for (int p = 0; p < kProcesses; ++p) {
    int64_t result[2] = {0, 0};
    EXPECT_EQ(read(fds[0], result, sizeof(result)), static_cast<ssize_t>(sizeof(result)));
    EXPECT_EQ(result[1], 0) << "store errors in a process";
    total += result[0];
  }
  close(fds[0]);
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return total;
}

TEST_F(RedisFleetTest, ProcessesAndThreadsNeverExceedTheLimit) {
  for (AlgorithmKind kind : {AlgorithmKind::kFixedWindow, AlgorithmKind::kSlidingWindowLog,
                             AlgorithmKind::kSlidingWindowCounter, AlgorithmKind::kTokenBucket,
                             AlgorithmKind::kGcra, AlgorithmKind::kLeakyBucket}) {
    ASSERT_TRUE(server_->command({"FLUSHALL"}));
    // Every decision passes time 0. A fixed window on Redis's clock could end in the middle
    // of the run (the count starts over): on that virtual time it is one window, whenever
    // the test runs. The others refill too slowly on Redis's clock to matter.
    RedisStoreOptions options;
    options.virtual_time = kind == AlgorithmKind::kFixedWindow;
    int64_t admitted = admittedByFleet([kind, options] {
      return std::make_unique<RedisStore>(newClient(), "fleet", params(kind), options);
    });
    EXPECT_EQ(admitted, 200) << algorithmName(kind);
  }
}

TEST_F(RedisFleetTest, PrefetchingFleetNeverExceedsTheLimitAndReturnsLeases) {
  for (AlgorithmKind kind : {AlgorithmKind::kTokenBucket, AlgorithmKind::kGcra}) {
    ASSERT_TRUE(server_->command({"FLUSHALL"}));
    int64_t admitted = admittedByFleet([kind] {
      PrefetchOptions options;
      options.batch = 8;
      options.hot_keys = {"shared-key"};
      options.lease_ms = 600'000;
      return std::make_unique<PrefetchStore>(
          std::make_unique<RedisStore>(newClient(), "fleet", params(kind)), kind, options);
    });
    // Leases can strand units on one process while another is rejected: fewer, never more.
    EXPECT_LE(admitted, 200) << algorithmName(kind);
    EXPECT_GE(admitted, 200 - kProcesses * 7) << algorithmName(kind);
    // Every process gave back what it did not spend: the bucket holds exactly the rest.
    RedisStore check(newClient(), "fleet", params(kind));
    auto d = check.decide("shared-key", 0, 1);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->remaining + (d->allowed() ? 1 : 0), 200 - admitted) << algorithmName(kind);
  }
}

TEST_F(RedisFleetTest, PrefetchSavesRoundTripsAndDetectsHotKeys) {
  auto client = newClient();
  PrefetchOptions options;
  options.batch = 10;
  options.detect_per_s = 5;  // the 5th decision within a second makes the key hot
  auto p = params(AlgorithmKind::kTokenBucket);
  PrefetchStore store(std::make_unique<RedisStore>(client, "hot", p), p.kind, options);
  ASSERT_TRUE(store.decide("warm-up", 0, 1).ok());  // loads the script
  int64_t trips = client->roundTrips();
  int64_t now_ns = 1'000'000'000;
  for (int i = 0; i < 104; ++i) ASSERT_TRUE(store.decide("k", now_ns, 1)->allowed());
  // 4 before the key turned hot, then 100 in leases of 10: 14 round trips, not 104.
  EXPECT_EQ(client->roundTrips() - trips, 14);
  PrefetchStats stats = store.stats();
  EXPECT_EQ(stats.hot_keys, 1);
  EXPECT_EQ(stats.leases, 10);
  EXPECT_EQ(stats.stranded, 0);
  ASSERT_TRUE(store.decide("k", now_ns, 1)->allowed());
  EXPECT_EQ(store.stats().stranded, 9);
  store.returnLeases();
  EXPECT_EQ(store.stats().stranded, 0);
  EXPECT_EQ(store.stats().units_returned, 9);
}

// A bucket lease decided again long after it ended: its units lapse. Given back then, they
// would be counted twice (the bucket refilled meanwhile as if they were spent), and with the
// bucket drained elsewhere each instance would admit its lease's worth again at once.
TEST_F(RedisFleetTest, ABucketLeaseDecidedLongAfterItEndedLapsesInsteadOfGoingBack) {
  RedisStoreOptions virtual_time;
  virtual_time.virtual_time = true;
  AlgorithmParams p;
  p.kind = AlgorithmKind::kGcra;
  p.capacity = 20;
  p.rate_per_s = 1;
  PrefetchOptions options;
  options.batch = 16;
  options.hot_keys = {"k"};
  options.lease_ms = 1000;
  PrefetchStore held(std::make_unique<RedisStore>(newClient(), "late-lease", p, virtual_time),
                     p.kind, options);
  ASSERT_TRUE(held.decide("k", 0, 1)->allowed());  // leases 15 more, held here
  ASSERT_EQ(held.stats().stranded, 15);
  // an hour on, the bucket is full again in Redis; another instance drains it
  const int64_t hour_ns = 3600LL * 1'000'000'000;
  RedisStore other(newClient(), "late-lease", p, virtual_time);
  int drained = 0;
  while (drained < 100 && other.decide("k", hour_ns, 1)->allowed()) ++drained;
  EXPECT_EQ(drained, 20);
  int admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += held.decide("k", hour_ns, 1)->allowed();
  EXPECT_EQ(admitted, 0) << "units of an hour-old lease were admitted on a drained bucket";
  EXPECT_EQ(held.stats().units_lapsed, 15);
  EXPECT_EQ(held.stats().units_returned, 0);
}

// At shutdown a lease that ended lapses too, by the limiter's clock; one still running goes
// back. A key longer than Redis keeps as it is never turns hot: no table here holds it.
TEST_F(RedisFleetTest, ShutdownReturnsOnlyLeasesStillRunningAndLongKeysAreNeverHot) {
  auto clock = std::make_shared<ManualClock>(0);
  AlgorithmParams p = params(AlgorithmKind::kTokenBucket);
  PrefetchOptions options;
  options.batch = 8;
  options.hot_keys = {"ended", "running"};
  options.detect_per_s = 2;
  options.lease_ms = 1000;
  options.clock = clock;
  PrefetchStore store(std::make_unique<RedisStore>(newClient(), "shutdown", p), p.kind, options);
  ASSERT_TRUE(store.decide("ended", 0, 1)->allowed());              // ends at 1 s
  ASSERT_TRUE(store.decide("running", 900'000'000, 1)->allowed());  // ends at 1.9 s
  const std::string long_key(RedisStore::kMaxKeyBytes + 1, 'x');
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store.decide(long_key, 900'000'000, 1)->allowed());
  EXPECT_EQ(store.stats().hot_keys, 2) << "the long key turned hot";
  clock->setMs(1500);
  store.returnLeases();
  EXPECT_EQ(store.stats().units_lapsed, 7);
  EXPECT_EQ(store.stats().units_returned, 7);
}

// A hot key's lease answers without Redis: with Redis gone, those answers must not clear the
// failures of the calls that do reach it, or the breaker never opens while a hot key is busy
// and every other decision waits out its timeout.
TEST_F(RedisFleetTest, LeaseAnswersDoNotKeepTheBreakerFromOpening) {
  auto client = clientWithTimeout(100);
  AlgorithmParams p = params(AlgorithmKind::kTokenBucket);
  PrefetchOptions options;
  options.batch = 50;
  options.hot_keys = {"hot"};
  options.lease_ms = 600'000;
  auto breaker = std::make_shared<CircuitBreaker>(CircuitBreakerOptions{3, 60'000},
                                                  std::make_shared<SteadyClock>());
  FailoverStore store(std::make_unique<PrefetchStore>(
                          std::make_unique<RedisStore>(client, "breaker", p), p.kind, options),
                      nullptr, FailureMode::kClosed, breaker);
  ASSERT_TRUE(store.decide("hot", 0, 1)->allowed());  // leases 49 more
  server_->freeze();
  struct Thaw {
    ~Thaw() { server_->thaw(); }
  } thaw;
  for (int i = 0; i < 3; ++i) {
    Result<Decision> hot = store.decide("hot", 0, 1);
    EXPECT_TRUE(hot.ok() && hot->allowed()) << "the lease answers";
    Result<Decision> cold = store.decide("cold" + std::to_string(i), 0, 1);
    EXPECT_FALSE(cold.ok() && cold->allowed()) << "Redis is gone: closed mode refuses";
  }
  EXPECT_EQ(breaker->state(), BreakerState::kOpen) << "three calls to Redis failed";
}

TEST_F(RedisFleetTest, FixedWindowLeasesEndWithTheirWindow) {
  auto client = newClient();
  RedisStoreOptions virtual_time;
  virtual_time.virtual_time = true;
  AlgorithmParams p = params(AlgorithmKind::kFixedWindow);
  p.limit = 10;
  p.window_ms = 1000;
  PrefetchOptions options;
  options.batch = 8;
  options.hot_keys = {"k"};
  PrefetchStore store(std::make_unique<RedisStore>(client, "fw", p, virtual_time), p.kind, options);
  const int64_t ms = 1'000'000;
  ASSERT_TRUE(store.decide("k", 100 * ms, 1)->allowed());  // leases 7 more, for window 0
  EXPECT_EQ(store.stats().stranded, 7);
  // In the next window the old lease is worthless: spending it would admit 17 in window 1.
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(store.decide("k", 1100 * ms, 1)->allowed()) << i;
  EXPECT_FALSE(store.decide("k", 1100 * ms, 1)->allowed());
  EXPECT_EQ(store.stats().units_lapsed, 7);
}

// A request admitted in window 0 and refunded in window 1 (a slow body ending in a 400):
// its unit counted in window 0, so it must not be given to window 1's lease, or window 1
// admits more than its limit (the exact store's refund ignores a past window alike).
TEST_F(RedisFleetTest, ARefundFromAnEndedWindowDoesNotGrowTheNextWindowsLease) {
  auto client = newClient();
  RedisStoreOptions virtual_time;
  virtual_time.virtual_time = true;
  AlgorithmParams p = params(AlgorithmKind::kFixedWindow);
  p.limit = 10;
  p.window_ms = 1000;
  PrefetchOptions options;
  options.batch = 4;
  options.hot_keys = {"k"};
  PrefetchStore store(std::make_unique<RedisStore>(client, "late", p, virtual_time), p.kind,
                      options);
  const int64_t ms = 1'000'000;
  std::vector<int64_t> held;  // admissions of window 0 whose requests are still running
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(store.decide("k", 900 * ms, 1)->allowed());
    held.push_back(900 * ms);
  }
  ASSERT_TRUE(store.decide("k", 1100 * ms, 1)->allowed());  // window 1's first lease
  for (int64_t admitted : held) store.refund("k", admitted, 1100 * ms, 1);
  int admitted_in_window_1 = 1;
  for (int i = 0; i < 30; ++i) admitted_in_window_1 += store.decide("k", 1200 * ms, 1)->allowed();
  EXPECT_EQ(admitted_in_window_1, 10);
}

// A refill that Redis answers in a window after the lease's (our clock has not seen the
// window end: here it stands still at 0, on Redis's own clock two seconds pass) finds the
// units left of the last window worthless: they lapse rather than join the new lease, or
// the new window would admit them on top of its limit.
TEST_F(RedisFleetTest, UnitsLeftOfAnEarlierWindowLapseWhenARefillIsAnsweredInANewOne) {
  auto client = newClient();
  AlgorithmParams p = params(AlgorithmKind::kFixedWindow);
  p.limit = 10;
  p.window_ms = 2000;
  PrefetchOptions options;
  options.batch = 4;
  options.hot_keys = {"k"};
  PrefetchStore store(std::make_unique<RedisStore>(client, "carry", p), p.kind, options);
  ASSERT_TRUE(store.decide("k", 0, 1)->allowed());               // leases 3
  ASSERT_TRUE(store.decide("k", 0, 1)->allowed());               // 2 left
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // at least: Redis's next window
  int admitted = 0;
  Result<Decision> refill = store.decide("k", 0, 3);  // more than is left: a refill
  ASSERT_TRUE(refill.ok()) << refill.error().message;
  admitted += refill->allowed() ? 3 : 0;
  for (int i = 0; i < 20; ++i) admitted += store.decide("k", 0, 1)->allowed();
  EXPECT_EQ(admitted, 10) << "units of the last window were spent in this one";
  EXPECT_EQ(store.stats().units_lapsed, 2);
}

// With Redis stalled, a thread refilling a hot key's lease must not make the others queue
// behind it (each then waiting out its own timeout in turn): they ask Redis directly, side
// by side. Redis's writes are paused (CLIENT PAUSE WRITE), so each call stays in Redis,
// counted as a blocked client, until the pause is lifted.
TEST_F(RedisFleetTest, AStalledLeaseRefillDoesNotQueueTheOtherThreadsBehindIt) {
  auto client = clientWithTimeout(60'000);  // longer than the test waits: no call times out
  AlgorithmParams p = params(AlgorithmKind::kTokenBucket);
  PrefetchOptions options;
  options.batch = 4;
  options.hot_keys = {"k"};
  PrefetchStore store(std::make_unique<RedisStore>(client, "stall", p), p.kind, options);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(store.decide("k", 0, 1)->allowed());  // lease spent

  auto blocked = [&] {
    auto info = server_->command({"INFO", "clients"});
    const size_t at = info ? info->str.find("blocked_clients:") : std::string::npos;
    return at == std::string::npos ? -1 : std::stoi(info->str.substr(at + 16));
  };
  auto waitForBlocked = [&](int want) {
    for (int i = 0; i < 2000 && blocked() < want; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return blocked();
  };
  ASSERT_TRUE(server_->command({"CLIENT", "PAUSE", "60000", "WRITE"}));
  std::atomic<int> answered{0};
  std::thread refilling([&] { answered += store.decide("k", 0, 1).ok(); });
  const int first = waitForBlocked(1);
  std::thread other([&] { answered += store.decide("k", 0, 1).ok(); });
  const int both = waitForBlocked(2);
  ASSERT_TRUE(server_->command({"CLIENT", "UNPAUSE"}));
  refilling.join();
  other.join();
  EXPECT_EQ(first, 1);
  EXPECT_EQ(both, 2) << "the second thread waited for the refill instead of asking Redis";
  EXPECT_EQ(answered.load(), 2);
}

// `floodgate lab --sharing` against the store it models: the same requests played through
// one PrefetchStore (and one plain RedisStore) per node on this Redis give the lab's
// figures, node by node. Every decision is made at the same instant of Redis's virtual
// clock in a window far longer than the test: the count never starts over and no lease
// ends, so only the order of the requests decides, as in the lab (whose limit never refills).
class RedisSharingLabTest : public RedisFleetTest {
 protected:
  static constexpr std::string_view kKey = "shared-key";
  static constexpr int64_t kNowNs = 1'000'000'000;

  static std::unique_ptr<RedisStore> newRemote(int64_t limit) {
    AlgorithmParams p = params(AlgorithmKind::kFixedWindow);
    p.limit = limit;
    RedisStoreOptions options;
    options.virtual_time = true;
    return std::make_unique<RedisStore>(newClient(), "lab", p, options);
  }
  // What the centre has left: a cost above the limit is refused without being counted.
  static int64_t leftAtCentre(int64_t limit) {
    auto d = newRemote(limit)->decide(kKey, kNowNs, limit + 1);
    EXPECT_TRUE(d.ok());
    return d.ok() ? d->remaining : -1;
  }
  // Round-robin, the lab's default order: node 0's first request, node 1's first, ...
  template <class Decide>
  static std::vector<lab::NodeFigures> playRoundRobin(int64_t nodes, int64_t requests,
                                                      Decide decide) {
    std::vector<lab::NodeFigures> figures(static_cast<size_t>(nodes));
    for (int64_t k = 0; k < requests; ++k) {
      for (int64_t n = 0; n < nodes; ++n) {
        Result<Decision> d = decide(n);
        EXPECT_TRUE(d.ok()) << d.error().message;
        ++(d.ok() && d->allowed() ? figures[n].admitted : figures[n].rejected);
      }
    }
    return figures;
  }
  static void expectSameNodes(const std::vector<lab::NodeFigures>& store,
                              const lab::ModeFigures& lab) {
    ASSERT_EQ(store.size(), lab.nodes.size());
    for (size_t n = 0; n < store.size(); ++n) {
      SCOPED_TRACE("node " + std::to_string(n) + ", " + std::string(sharingModeName(lab.mode)));
      EXPECT_EQ(store[n].admitted, lab.nodes[n].admitted);
      EXPECT_EQ(store[n].rejected, lab.nodes[n].rejected);
      EXPECT_EQ(store[n].stranded, lab.nodes[n].stranded);
      EXPECT_EQ(store[n].round_trips, lab.nodes[n].round_trips);
    }
  }

  // Plays the scenario through the lab and through the real stores; every figure agrees.
  void expectStoreMatchesLab(int64_t nodes, int64_t requests, int64_t limit, int64_t batch) {
    SCOPED_TRACE(std::to_string(nodes) + " nodes x " + std::to_string(requests) + ", limit " +
                 std::to_string(limit) + ", batch " + std::to_string(batch));
    lab::SharingOptions options;
    options.nodes = nodes;
    options.requests_per_node = requests;
    options.limit = limit;
    options.batch = batch;
    auto report = lab::runSharing(options);
    ASSERT_TRUE(report.ok()) << report.error().message;
    // The library is loaded (FUNCTION LOAD after "Function not found") before any node counts its
    // round trips.
    ASSERT_TRUE(newRemote(limit)->decide("warm-up", kNowNs, 1).ok());

    // Central counting: a plain RedisStore per node, one round trip per request.
    std::vector<std::unique_ptr<RedisStore>> central;
    for (int64_t n = 0; n < nodes; ++n) central.push_back(newRemote(limit));
    std::vector<lab::NodeFigures> figures = playRoundRobin(
        nodes, requests, [&](int64_t n) { return central[n]->decide(kKey, kNowNs, 1); });
    for (int64_t n = 0; n < nodes; ++n) figures[n].round_trips = central[n]->client().roundTrips();
    expectSameNodes(figures, report->central);
    EXPECT_EQ(leftAtCentre(limit), report->central.left_at_centre);

    // Prefetch: a PrefetchStore per node with the key hot, the same requests on a fresh count.
    ASSERT_TRUE(server_->command({"FLUSHALL"}));
    PrefetchOptions prefetch;
    prefetch.batch = batch;
    prefetch.hot_keys = {std::string(kKey)};
    std::vector<std::unique_ptr<PrefetchStore>> stores;
    for (int64_t n = 0; n < nodes; ++n) {
      stores.push_back(
          std::make_unique<PrefetchStore>(newRemote(limit), AlgorithmKind::kFixedWindow, prefetch));
    }
    figures = playRoundRobin(nodes, requests,
                             [&](int64_t n) { return stores[n]->decide(kKey, kNowNs, 1); });
    for (int64_t n = 0; n < nodes; ++n) {
      figures[n].stranded = stores[n]->stats().stranded;
      figures[n].round_trips = stores[n]->remote().client().roundTrips();
    }
    expectSameNodes(figures, report->prefetch);
    EXPECT_EQ(leftAtCentre(limit), report->prefetch.left_at_centre);
    // The stranded units were taken from the centre: given back, they are there again.
    stores.clear();
    EXPECT_EQ(leftAtCentre(limit), report->prefetch.left_at_centre + report->prefetch.stranded);
  }
};

// 4 nodes, 2 requests each, limit 20, batch 8: borrows of 8, 8 and 4, the fourth node
// rejected twice while the others hold 14.
TEST_F(RedisSharingLabTest, TheDesignsWorkedExampleAgreesWithTheStore) {
  expectStoreMatchesLab(4, 2, 20, 8);
}

TEST_F(RedisSharingLabTest, BatchOfOneAgreesWithTheStore) { expectStoreMatchesLab(4, 2, 20, 1); }

TEST_F(RedisSharingLabTest, ManyNodesWithALargeBatchAgreeWithTheStore) {
  expectStoreMatchesLab(16, 20, 1000, 100);
}

TEST_F(RedisFleetTest, ARequestsPoliciesShareOneRoundTripAndKeepTheirFailureModes) {
  HttpConfig config;
  config.store.type = "redis";
  config.store.address = server_->address().text();
  config.store.timeout_ms = 1000;
  config.store.breaker_failures = 1;
  config.store.breaker_open_ms = 50;
  PolicyConfig per_ip;
  per_ip.name = "per-ip";
  per_ip.algorithm = params(AlgorithmKind::kSlidingWindowLog);
  per_ip.algorithm.limit = 3;
  PolicyConfig per_user = per_ip;
  per_user.name = "per-user";
  per_user.key.kind = KeyKind::kUser;
  per_user.algorithm = params(AlgorithmKind::kGcra);
  per_user.algorithm.capacity = 5;
  per_user.failure_mode = FailureMode::kClosed;
  config.policies = {per_ip, per_user};
  auto made = Limiter::create(config, std::make_shared<SteadyClock>());
  ASSERT_TRUE(made.ok());
  Limiter& limiter = **made;
  redis::Client& client = dynamic_cast<FailoverStore&>(limiter.store(0)).batchable()->client();
  ASSERT_TRUE(limiter.check({"GET", "/", "10.0.0.1", {}, "warm-up", {}}).allowed());  // scripts
  int64_t trips = client.roundTrips();
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(limiter.check({"GET", "/", "10.0.0.1", {}, "ann", {}}).allowed());
  }
  EXPECT_EQ(client.roundTrips() - trips, 2);  // two policies, one round trip per request
  // per-ip is spent (3); the user's units come back (all-or-nothing), one refund each.
  Verdict v = limiter.check({"GET", "/", "10.0.0.1", {}, "ann", {}});
  EXPECT_FALSE(v.allowed());
  EXPECT_EQ(v.violated, std::vector<std::string_view>{"per-ip"});
  EXPECT_TRUE(limiter.check({"GET", "/", "10.0.0.2", {}, "ann", {}}).allowed());
  EXPECT_TRUE(limiter.check({"GET", "/", "10.0.0.2", {}, "ann", {}}).allowed());
  EXPECT_TRUE(limiter.check({"GET", "/", "10.0.0.2", {}, "ann", {}}).allowed());  // 5th for ann
  EXPECT_FALSE(limiter.check({"GET", "/", "10.0.0.3", {}, "ann", {}}).allowed());

  server_->kill();  // both policies fail in the same call; each follows its own mode
  Verdict down = limiter.check({"GET", "/", "10.0.0.9", {}, "bob", {}});
  ASSERT_EQ(down.decisions.size(), 2u);
  EXPECT_EQ(down.decisions[0].decision.outcome, Outcome::kAllowed);           // open: local share
  EXPECT_EQ(down.decisions[1].decision.outcome, Outcome::kStoreUnavailable);  // closed
  EXPECT_EQ(dynamic_cast<FailoverStore&>(limiter.store(0)).stats().fallback_allowed, 1);
  ASSERT_TRUE(server_->restart());
}

}  // namespace
}  // namespace floodgate::http
