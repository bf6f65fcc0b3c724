// SPDX-License-Identifier: MIT
// Shaping under a real cpp-httplib server on 127.0.0.1: delays hold at most
// max_delayed_threads server threads and none longer than max_delay; what is refused is refunded.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "floodgate/adapters/httplib_adapter.h"
#include "floodgate/core/config_parser.h"

namespace floodgate::http {
namespace {

using std::chrono::nanoseconds;
constexpr int64_t kS = 1'000'000'000;

// A queue per API key draining one unit a second, by a clock the test holds still: every
// delay is exact however slowly the machine runs. /heavy costs 6 units, anything else 1.
constexpr const char* kQueue = R"(http:
  retry_after_jitter: 0  # the exact waits (jitter: retry_jitter_test.cpp)
  policies:
    - name: queue
      key: header:X-API-Key
      algorithm: leaky_bucket
      capacity: 20
      rate_per_s: 1
      routes:
        - match: {path_prefix: /heavy}
          cost: 6
)";

// The adapter's wait, ended by the test rather than by time: each held thread counts itself
// and stays until open() (or a minute, so a failing test cannot hang).
class Gate {
 public:
  void wait(nanoseconds delay) {
    std::unique_lock lock(mutex_);
    ++waiting_;
    last_delay_ = delay;
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::minutes(1), [&] { return open_; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  // Waits (a minute at most) until `done` holds of the number of threads that have waited.
  template <typename Done>
  bool awaitWaiting(Done done) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::minutes(1), [&] { return done(waiting_); });
  }
  // Wakes awaitWaiting() to look again (something else it depends on changed).
  void poke() {
    std::lock_guard lock(mutex_);
    changed_.notify_all();
  }
  int waiting() {
    std::lock_guard lock(mutex_);
    return waiting_;
  }
  nanoseconds lastDelay() {
    std::lock_guard lock(mutex_);
    return last_delay_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int waiting_ = 0;
  nanoseconds last_delay_{0};
  bool open_ = false;
};

// The limiter in front of a cpp-httplib server on a free loopback port, its delays waited
// out on `gate`.
class Service {
 public:
  Service(HttplibOptions options, int pool_threads, const std::string& yaml = kQueue) {
    auto config = parseHttpConfigText(yaml, "test.yaml");
    EXPECT_TRUE(config.ok()) << config.error().message;
    auto made = Limiter::create(std::move(*config), clock_);
    EXPECT_TRUE(made.ok());
    limiter_ = std::move(*made);
    server_.new_task_queue = [pool_threads] { return new httplib::ThreadPool(pool_threads); };
    // /work takes a millisecond of the test's clock, as a route that does something, and
    // so does /slow-read, whose response then takes a second to write, as to a client that
    // reads it slowly (cpp-httplib calls the logger once the response is written).
    server_.Get(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.path == "/work" || req.path == "/slow-read") clock_->advanceNs(kS / 1000);
      res.set_content("ok", "text/plain");
    });
    server_.set_logger([this](const httplib::Request& req, const httplib::Response&) {
      if (req.path == "/slow-read") clock_->advanceNs(kS);
      ++written_;
    });
    options.wait_for = [this](nanoseconds delay) {
      if (!sleep_on_clock_) return gate_.wait(delay);
      clock_->advanceNs(delay.count());
    };
    options.on_verdict = [this](const httplib::Request&, const Verdict& verdict) {
      if (verdict.shed) ++shed_;
      if (verdict.reportable()) ++reportable_;
    };
    delayed_ = installRateLimiter(server_, limiter_, std::move(options));
    port_ = server_.bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Service() {
    gate_.open();
    server_.stop();
    thread_.join();
  }

  httplib::Result get(const std::string& path, const std::string& key = "alpha") {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(30);
    client.set_read_timeout(120);
    return client.Get(path.c_str(), {{"X-API-Key", key}});
  }
  // A GET from `client` as a trusted proxy in front of it tells (X-Forwarded-For).
  httplib::Result getFrom(const std::string& client) {
    httplib::Client connection("127.0.0.1", port_);
    connection.set_connection_timeout(30);
    connection.set_read_timeout(120);
    return connection.Get("/", {{"X-Forwarded-For", client}});
  }
  // A DELETE, which no route serves, without an API key, which no policy limits.
  httplib::Result remove(const std::string& path) {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(30);
    client.set_read_timeout(120);
    return client.Delete(path.c_str());
  }
  // Waits (10 s at most, so that a failing test cannot hang) until `count` responses have
  // been written.
  bool awaitWritten(int count) {
    for (int i = 0; i < 10'000 && written_ < count; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return written_ >= count;
  }
  // From now on a delay is waited out by moving the test's clock on by it, as a sleep
  // would take it, rather than on the gate.
  void sleepOnClock() { sleep_on_clock_ = true; }

  // Waits (10 s at most, so that a failing test cannot hang) until `count` requests are in
  // flight.
  bool awaitInFlight(int64_t count) {
    for (int i = 0; i < 10'000; ++i) {
      if (limiter_->shedder()->inFlight() == count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

  ManualClock& clock() { return *clock_; }
  const Limiter& limiter() { return *limiter_; }
  Gate& gate() { return gate_; }
  const DelayedThreads& delayed() { return *delayed_; }
  // Refusals for want of a free thread (Verdict::shed: never reported as the client's own).
  int shed() const { return shed_; }
  // Refusals counted against the client for a ban (http.escalate).
  int reportable() const { return reportable_; }

 private:
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(1'000 * kS);
  std::shared_ptr<Limiter> limiter_;
  Gate gate_;
  std::atomic<bool> sleep_on_clock_{false};
  std::atomic<int> written_{0};
  httplib::Server server_;
  std::shared_ptr<const DelayedThreads> delayed_;
  std::atomic<int> shed_{0};
  std::atomic<int> reportable_{0};
  int port_ = 0;
  std::thread thread_;
};

// The remaining units the RateLimit field of a response reports for "queue".
int remaining(const httplib::Result& response) {
  std::string field = response->get_header_value("RateLimit");
  size_t r = field.find(";r=");
  return r == std::string::npos ? -1 : std::atoi(field.c_str() + r + 3);
}

TEST(Shaping, DelaysHoldAtMostMaxDelayedThreadsAndTheRestAreRefusedAndRefunded) {
  constexpr int kHeld = 2;     // max_delayed_threads
  constexpr int kRefused = 3;  // requests beyond it
  HttplibOptions options;
  options.max_delayed_threads = kHeld;
  options.max_delayed_threads_per_key = kHeld;     // one queue: it may take them all
  options.max_delay = std::chrono::seconds(1000);  // only the thread bound applies
  // every request below is in the pool at once: none waits for a thread to free
  Service service(options, kHeld + kRefused + 2);
  EXPECT_EQ(service.delayed().max(), size_t{kHeld});

  // The queue's first request leaves at once; every later one waits its turn (1 s each).
  auto first = service.get("/");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(service.gate().waiting(), 0);

  std::atomic<int> ok{0};
  std::atomic<int> too_many{0};
  std::atomic<int> other{0};
  std::vector<std::string> retry_afters(kHeld + kRefused);
  std::vector<std::string> bodies(kHeld + kRefused);
  std::vector<std::thread> clients;
  for (int i = 0; i < kHeld + kRefused; ++i) {
    clients.emplace_back([&, i] {
      auto response = service.get("/");
      if (response && response->status == 200) {
        ++ok;
      } else if (response && response->status == 429) {
        retry_afters[i] = response->get_header_value("Retry-After");
        bodies[i] = response->body;
        ++too_many;
      } else {
        ++other;
      }
      service.gate().poke();
    });
  }
  // Every request is decided: held in the gate, or answered (the held ones cannot be).
  ASSERT_TRUE(service.gate().awaitWaiting(
      [&](int waiting) { return waiting + too_many + other == kHeld + kRefused; }));
  EXPECT_EQ(service.gate().waiting(), kHeld);
  EXPECT_EQ(service.delayed().held(), size_t{kHeld});
  EXPECT_EQ(too_many, kRefused);
  EXPECT_EQ(service.shed(), kRefused);  // the server's want of threads, not their excess
  EXPECT_EQ(other, 0);
  EXPECT_EQ(ok, 0);

  service.gate().open();
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(ok, kHeld);
  EXPECT_EQ(too_many, kRefused);
  EXPECT_EQ(service.delayed().held(), 0u);
  for (int i = 0; i < kHeld + kRefused; ++i) {
    if (bodies[i].empty()) continue;
    // Retry-After is the refused request's own delay (at least 1 s in this queue)
    EXPECT_GE(std::atoi(retry_afters[i].c_str()), 1) << i;
    auto body = nlohmann::json::parse(bodies[i]);
    EXPECT_EQ(body["status"], 429);
    EXPECT_EQ(body["violated-policies"], nlohmann::json::array({"queue"}));
  }

  // The refused requests took nothing: the queue holds the first and the held ones (3 s),
  // so the next one waits 3 s and leaves 20 - 4 units; with the refused still in, 7 s.
  auto next = service.get("/");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(service.gate().lastDelay(), nanoseconds((1 + kHeld) * kS));
  EXPECT_EQ(remaining(next), 20 - (1 + kHeld + 1));
  EXPECT_EQ(service.delayed().held(), 0u);
}

TEST(Shaping, DelayBeyondMaxIsRefusedAtOnceWithRetryAfterAndRefunded) {
  HttplibOptions options;
  options.max_delay = std::chrono::seconds(2);
  Service service(options, 4);
  service.gate().open();  // admitted delays pass straight through; the gate still counts them

  auto first = service.get("/heavy");  // 6 units: leaves at once, the queue drains in 6 s
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(remaining(first), 14);

  auto second = service.get("/heavy");  // would wait 6 s > 2 s
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 429);
  EXPECT_EQ(service.gate().waiting(), 0);  // refused without holding its thread
  EXPECT_EQ(second->get_header_value("Content-Type"), "application/problem+json");
  // in 4 s the queue ahead has drained to 2 s, the longest wait allowed
  EXPECT_EQ(second->get_header_value("Retry-After"), "4");
  auto body = nlohmann::json::parse(second->body);
  EXPECT_EQ(body["retry-after"], 4);
  EXPECT_EQ(body["violated-policies"], nlohmann::json::array({"queue"}));
  EXPECT_EQ(remaining(second), 14);  // refunded: the queue still holds only the first
  EXPECT_EQ(service.shed(), 0);      // its own queue was too long: its own excess

  // Just before the Retry-After the wait is still over the max; at it, it is the max. Only a
  // refund makes the second true (without it the queue would still hold 8 s).
  service.clock().advanceNs(4 * kS - 1);
  auto early = service.get("/");
  ASSERT_TRUE(early);
  EXPECT_EQ(early->status, 429);
  EXPECT_EQ(early->get_header_value("Retry-After"), "1");
  service.clock().advanceNs(1);
  auto on_time = service.get("/");
  ASSERT_TRUE(on_time);
  EXPECT_EQ(on_time->status, 200);
  EXPECT_EQ(service.gate().waiting(), 1);
  EXPECT_EQ(service.gate().lastDelay(), nanoseconds(2 * kS));
  EXPECT_EQ(remaining(on_time), 20 - 3);
  EXPECT_EQ(service.delayed().held(), 0u);
}

// A refusal for a delay beyond max_delay is spread as every refusal is (retry_after_jitter):
// clients refused together must not all come back at the same second.
TEST(Shaping, ARefusedDelaysRetryAfterIsJittered) {
  HttplibOptions options;
  options.max_delay = std::chrono::seconds(2);
  std::string yaml = kQueue;
  yaml.replace(yaml.find("retry_after_jitter: 0"), 21, "retry_after_jitter: 1");
  Service service(options, 4, yaml);
  service.gate().open();
  ASSERT_EQ(service.get("/heavy")->status, 200);  // the queue drains in 6 s
  std::set<std::string> told;
  for (int i = 0; i < 40; ++i) {
    auto refused = service.get("/heavy");  // 6 s > 2 s: in 4 s it would be 2 s
    ASSERT_TRUE(refused);
    ASSERT_EQ(refused->status, 429);
    const int seconds = std::atoi(refused->get_header_value("Retry-After").c_str());
    EXPECT_GE(seconds, 4) << "never earlier than a retry can pass";
    EXPECT_LE(seconds, 8) << "at most the wait and all of it again";
    told.insert(refused->get_header_value("Retry-After"));
  }
  EXPECT_GT(told.size(), 1u) << "every refusal told the same second";
}

// A request refused for its delay is refunded, so it costs its client nothing: were its
// few microseconds a latency sample, a flood of them would teach the adaptive limit a
// no-load latency of nothing and shed honest requests for it.
TEST(Shaping, ARequestRefusedForItsDelayTeachesTheAdaptiveLimitNothing) {
  const std::string yaml = std::string(kQueue) + R"(
  adaptive_concurrency:
    {floor: 2, ceiling: 50, initial: 10, window: 10, window_ms: 10, probe_every: 0}
)";
  HttplibOptions options;
  options.max_delay = std::chrono::seconds(2);
  Service service(options, 4, yaml);
  service.gate().open();
  const AdaptiveLimit* adaptive = service.limiter().shedder()->adaptive();
  ASSERT_NE(adaptive, nullptr);
  for (int i = 0; i < 60; ++i) {  // a queue each, so none waits: each takes 1 ms
    auto honest = service.get("/work", "honest-" + std::to_string(i));
    ASSERT_TRUE(honest);
    ASSERT_EQ(honest->status, 200) << i;
  }
  ASSERT_EQ(adaptive->noLoadLatencyNs(), kS / 1000);
  auto first = service.get("/heavy");  // 6 units: the next would wait 6 s, over the 2 s
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200);
  for (int i = 0; i < 100; ++i) {
    auto refused = service.get("/heavy");
    ASSERT_TRUE(refused);
    ASSERT_EQ(refused->status, 429) << i;
    if (i % 10 == 9) service.clock().advanceNs(10 * kS / 1000);  // windows close
  }
  EXPECT_EQ(adaptive->noLoadLatencyNs(), kS / 1000);
  EXPECT_EQ(remaining(service.get("/heavy")), 20 - 6) << "every refusal was refunded";
}

// A request waiting out its shaping delay does no work, so it holds no place in flight:
// clients keeping their queues deep would else fill the priority classes with sleepers and
// have everyone else's requests shed.
TEST(Shaping, AWaitingRequestHoldsNoPlaceInFlight) {
  const std::string yaml = std::string(kQueue) + R"(
  shedding:
    classes:
      - {name: critical, max_in_flight: 2, match: [{path_prefix: /critical}]}
      - {name: bulk, max_in_flight: 1}
)";
  Service service({}, 4, yaml);
  auto first = service.get("/");  // leaves at once: the next of "alpha" waits 1 s
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200);
  std::atomic<int> waited{0};  // its status
  std::thread client([&] {
    auto response = service.get("/");
    waited = response ? response->status : -1;
  });
  ASSERT_TRUE(service.gate().awaitWaiting([](int waiting) { return waiting == 1; }));
  // the first's place is given back once the server has destroyed its written response
  EXPECT_TRUE(service.awaitInFlight(0));
  // bulk's one place is free for another client while "alpha" waits
  auto other = service.get("/", "beta");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200);
  ASSERT_TRUE(service.awaitInFlight(0));  // so that the waiting one finds its place free
  service.gate().open();
  client.join();
  EXPECT_EQ(waited, 200);
  const std::vector<PriorityClassStats> stats = service.limiter().shedder()->stats();
  EXPECT_EQ(stats[1].admitted, 3) << "a request that waited is counted once";
  EXPECT_EQ(stats[1].shed, 0);
}

// One queue waits in at most its share of the delayed threads, so that a few clients each
// keeping their own queue deep cannot take them all and have every other client's wait
// refused. Past its share, a request of that queue is refused as its own doing (not shed),
// and like every refusal of a wait, not reported.
TEST(Shaping, OneQueueWaitsInAtMostItsShareOfTheDelayedThreads) {
  HttplibOptions options;
  options.max_delayed_threads = 4;
  options.max_delayed_threads_per_key = 2;
  options.max_delay = std::chrono::seconds(1000);  // only the thread bounds apply
  Service service(options, 8);
  EXPECT_EQ(service.delayed().maxPerKey(), 2u);
  ASSERT_EQ(service.get("/")->status, 200);  // "alpha"'s first leaves at once
  ASSERT_EQ(service.get("/", "beta")->status, 200);

  std::atomic<int> too_many{0};
  std::string retry_after;
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {  // three of "alpha", then one of "beta"
    clients.emplace_back([&, i] {
      auto response = service.get("/", i < 3 ? "alpha" : "beta");
      if (response && response->status == 429) {
        retry_after = response->get_header_value("Retry-After");
        ++too_many;
      }
      service.gate().poke();
    });
  }
  ASSERT_TRUE(service.gate().awaitWaiting([&](int waiting) { return waiting + too_many == 4; }));
  EXPECT_EQ(service.gate().waiting(), 3) << "alpha's two and beta's one";
  EXPECT_EQ(too_many, 1);
  EXPECT_EQ(service.delayed().held(), 3u);
  EXPECT_GE(std::atoi(retry_after.c_str()), 1) << "its own delay: then it needs no wait";
  EXPECT_EQ(service.shed(), 0) << "its own queue's share was taken: not other clients' doing";
  EXPECT_EQ(service.reportable(), 0);
  service.gate().open();
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(service.delayed().held(), 0u);
}

// Queues keyed by client address: one holder of an IPv6 /48 has a queue per /64 (65,536),
// so the queues of one network's clients wait in at most a key's share of the threads
// together; a client of another network still gets its wait. Past the share, refused as its
// own doing (not shed), and not reported.
TEST(Shaping, OneNetworksClientsWaitInAtMostAKeysShareOfTheDelayedThreads) {
  HttplibOptions options;
  options.max_delayed_threads = 4;
  options.max_delayed_threads_per_key = 2;
  options.max_delay = std::chrono::seconds(1000);  // only the thread bounds apply
  Service service(options, 8, R"(http:
  retry_after_jitter: 0
  trusted_proxies: [127.0.0.1]
  client_header: x-forwarded-for
  policies:
    - {name: per-ip-queue, key: ip, algorithm: leaky_bucket, capacity: 20, rate_per_s: 1}
)");
  EXPECT_EQ(service.delayed().maxPerNetwork(), 2u) << "a key's share by default";
  const std::vector<std::string> clients = {"2001:db8:77:1::1", "2001:db8:77:2::1",
                                            "2001:db8:77:3::1", "2001:db8:78::1"};
  for (const std::string& client : clients) {  // each one's first leaves at once
    ASSERT_EQ(service.getFrom(client)->status, 200) << client;
  }
  std::atomic<int> too_many{0};
  std::vector<std::thread> waiting;
  for (const std::string& client : clients) {
    waiting.emplace_back([&, client] {
      auto response = service.getFrom(client);
      if (response && response->status == 429) ++too_many;
      service.gate().poke();
    });
  }
  ASSERT_TRUE(service.gate().awaitWaiting([&](int held) { return held + too_many == 4; }));
  EXPECT_EQ(too_many, 1) << "one of the three /64s of 2001:db8:77::/48, whichever came last";
  EXPECT_EQ(service.gate().waiting(), 3) << "two of the /48, and the other network's one";
  EXPECT_EQ(service.shed(), 0) << "its network's share was taken: not other clients' doing";
  EXPECT_EQ(service.reportable(), 0);
  service.gate().open();
  for (std::thread& client : waiting) client.join();
  EXPECT_EQ(service.delayed().held(), 0u);
}

// A queue per client address, 10 s deep: a client within it is no offender, even when the
// server will not hold its requests that long. Reported, a page of 60 parallel calls would
// count 49 rejections towards a ban at the packet layer.
TEST(Shaping, ARequestRefusedForADelayBeyondMaxDelayIsNotReportable) {
  HttplibOptions options;
  options.max_delay = std::chrono::seconds(1);
  Service service(options, 4, R"(http:
  retry_after_jitter: 0
  policies:
    - {name: per-ip-queue, key: ip, algorithm: leaky_bucket, capacity: 100, rate_per_s: 10}
)");
  service.gate().open();
  int admitted = 0;
  int refused = 0;
  for (int i = 0; i < 60; ++i) {  // the clock stands still: the i-th waits i × 100 ms
    auto response = service.get("/");
    ASSERT_TRUE(response);
    if (response->status == 200) {
      ++admitted;
      continue;
    }
    ASSERT_EQ(response->status, 429) << i;
    ++refused;
    // 100 ms of queue drains before its wait is 1 s again: told as the whole second
    EXPECT_EQ(response->get_header_value("Retry-After"), "1") << i;
  }
  EXPECT_EQ(admitted, 11);  // waits of 0 to 1 s
  EXPECT_EQ(refused, 49);
  EXPECT_EQ(service.shed(), 0);
  EXPECT_EQ(service.reportable(), 0) << "within its queue's capacity: not the client's excess";
}

// The adaptive limit, learning in windows of 10 requests.
const std::string kQueueAndAdaptive = std::string(kQueue) + R"(
  adaptive_concurrency:
    {floor: 2, ceiling: 50, initial: 10, window: 10, window_ms: 10, probe_every: 0}
)";

// A request no route serves is answered 404 by cpp-httplib in microseconds, under a policy
// or none: as latency samples, a burst of them would teach the adaptive limit a no-load
// latency of nothing, and every window of real traffic after would shrink it to its floor.
TEST(Shaping, RequestsAnswered4xxTeachTheAdaptiveLimitNothing) {
  Service service({}, 4, kQueueAndAdaptive);
  const AdaptiveLimit* adaptive = service.limiter().shedder()->adaptive();
  ASSERT_NE(adaptive, nullptr);
  for (int i = 0; i < 60; ++i) {  // a queue each, so none waits: each takes 1 ms
    auto honest = service.get("/work", "honest-" + std::to_string(i));
    ASSERT_TRUE(honest);
    ASSERT_EQ(honest->status, 200) << i;
  }
  ASSERT_EQ(adaptive->noLoadLatencyNs(), kS / 1000);
  for (int i = 0; i < 200; ++i) {
    auto missing = service.remove("/nothing");
    ASSERT_TRUE(missing);
    ASSERT_EQ(missing->status, 404) << i;
    if (i % 10 == 9) service.clock().advanceNs(10 * kS / 1000);  // windows close
  }
  EXPECT_EQ(adaptive->noLoadLatencyNs(), kS / 1000);
}

// A queued request's wait is no work of the service's: its latency sample starts when the
// wait ends, or a client keeping its own queue a second deep would make each of its
// samples a second long.
TEST(Shaping, TheAdaptiveLimitTimesAQueuedRequestFromTheEndOfItsWait) {
  Service service({}, 4, kQueueAndAdaptive);
  service.sleepOnClock();
  const AdaptiveLimit* adaptive = service.limiter().shedder()->adaptive();
  ASSERT_NE(adaptive, nullptr);
  for (int i = 0; i < 60; ++i) {  // one queue: each but the first waits about a second
    auto queued = service.get("/work");
    ASSERT_TRUE(queued);
    ASSERT_EQ(queued->status, 200) << i;
  }
  EXPECT_GT(service.clock().nowNs(), 1'000 * kS + 50 * kS) << "they waited";
  EXPECT_EQ(adaptive->noLoadLatencyNs(), kS / 1000) << "1 ms of work each";
  EXPECT_EQ(adaptive->recentLatencyNs(), kS / 1000);
}

// A client reading its response slowly (or not at all) holds a server thread, but says
// nothing of how fast the service works: the sample ends when the route has answered,
// before the response is written.
TEST(Shaping, TheAdaptiveLimitTimesARequestUntilItsRouteAnswersNotItsWrite) {
  Service service({}, 4, kQueueAndAdaptive);
  const AdaptiveLimit* adaptive = service.limiter().shedder()->adaptive();
  ASSERT_NE(adaptive, nullptr);
  for (int i = 0; i < 60; ++i) {
    auto read = service.get("/slow-read", "reader-" + std::to_string(i));
    ASSERT_TRUE(read);
    ASSERT_EQ(read->status, 200) << i;
    // written (the clock moved on by it) before the next request starts
    ASSERT_TRUE(service.awaitWritten(i + 1));
  }
  EXPECT_GT(service.clock().nowNs(), 1'000 * kS + 50 * kS) << "the writes took their time";
  EXPECT_EQ(adaptive->noLoadLatencyNs(), kS / 1000) << "1 ms of work each";
}

TEST(Shaping, ApplyDelayOffReportsTheDelayAndRefusesNothing) {
  HttplibOptions options;
  options.apply_delay = false;
  options.max_delay = std::chrono::seconds(2);
  options.max_delayed_threads = 0;
  Service service(options, 4);
  for (int i = 0; i < 3; ++i) {
    auto response = service.get("/heavy");
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200) << i;
  }
  EXPECT_EQ(service.gate().waiting(), 0);
  EXPECT_EQ(service.delayed().held(), 0u);
}

}  // namespace
}  // namespace floodgate::http
