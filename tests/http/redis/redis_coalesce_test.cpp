// SPDX-License-Identifier: MIT
// Calls of many threads to one server share round trips: each thread gets its own replies,
// counts stay exact, and a dead or frozen server fails each call by its own deadline.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "floodgate/redis/redis_store.h"
#include "http/algorithm_harness.h"
#include "redis/redis_fixture.h"

namespace floodgate::http {
namespace {

using testing::window;

class RedisCoalesceTest : public testing::RedisServerTest {};

// Every decision here passes time 0: on that virtual time, not Redis's clock, each key stays
// in one window for the whole test, whenever it runs (a window of Redis's clock could end
// in the middle of one, and the counts the tests check with it).
RedisStoreOptions onWindowZero() {
  RedisStoreOptions options;
  options.virtual_time = true;
  return options;
}

// What `threads` threads making `requests` decisions each on key "hot" got.
struct Tally {
  int admitted = 0;
  int errors = 0;
};

Tally decideFromThreads(RedisStore& store, int threads, int requests) {
  std::atomic<int> admitted{0}, errors{0};
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&] {
      for (int i = 0; i < requests; ++i) {
        auto d = store.decide("hot", 0, 1);
        if (!d) {
          ++errors;
          continue;
        }
        admitted += d->allowed();
      }
    });
  }
  for (auto& t : running) t.join();
  return {admitted.load(), errors.load()};
}

// Waits (polling) until `done` holds; false after 10 s.
template <typename F>
bool eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// N threads x M requests on one key against a limit L admit exactly L, whatever the
// interleaving and however the calls were batched.
TEST_F(RedisCoalesceTest, ThreadsSharingRoundTripsAdmitExactlyTheLimit) {
  constexpr int kThreads = 16, kRequests = 200, kLimit = 1234;
  RedisStore store(client_, "shared", window(AlgorithmKind::kFixedWindow, kLimit, 600'000),
                   onWindowZero());
  const int64_t trips_before = client_->roundTrips();
  const Tally tally = decideFromThreads(store, kThreads, kRequests);
  EXPECT_EQ(tally.errors, 0);
  EXPECT_EQ(tally.admitted, kLimit);
  EXPECT_LE(client_->roundTrips() - trips_before, int64_t{kThreads} * kRequests);
  auto state = server_->command({"GET", "fg:{shared:hot}:fixed_window:v3"});
  ASSERT_TRUE(state);
  EXPECT_EQ(testing::stateField(state->str, 1), std::to_string(kLimit));
}

// Each thread counts down a key of its own: the remaining counts it reads are exactly its
// own key's, in order (a reply handed to the wrong thread would break the sequence).
TEST_F(RedisCoalesceTest, EachThreadGetsItsOwnReplies) {
  constexpr int kThreads = 12, kRequests = 150;
  std::vector<std::unique_ptr<RedisStore>> stores;
  for (int t = 0; t < kThreads; ++t) {
    // a limit of its own per thread, so that replies of two threads cannot look alike
    stores.push_back(std::make_unique<RedisStore>(
        client_, "own", window(AlgorithmKind::kFixedWindow, 100 + 7 * t, 600'000), onWindowZero()));
  }
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int64_t limit = 100 + 7 * t;
      const std::string key = "thread-" + std::to_string(t);
      for (int i = 0; i < kRequests; ++i) {
        // every other call pipelines two decisions of the thread's key at once
        std::vector<RedisStore::Request> requests = {{key, 1, 0}};
        if (i % 2 == 1) requests.push_back({key, 1, 0});
        auto answers = stores[t]->decideMany(requests, 0);
        if (!answers) {
          failures[t] = answers.error().message;
          return;
        }
        for (size_t j = 0; j < answers->size(); ++j) {
          const auto& a = (*answers)[j];
          if (!a) {
            failures[t] = a.error().message;
            return;
          }
          const int64_t used = (i / 2) * 3 + (i % 2) + static_cast<int64_t>(j) + 1;
          const int64_t expect_remaining = std::max<int64_t>(0, limit - used);
          if (a->decision.limit != limit || a->decision.allowed() != (used <= limit) ||
              (used <= limit && a->decision.remaining != expect_remaining)) {
            failures[t] = "call " + std::to_string(i) + ": remaining " +
                          std::to_string(a->decision.remaining) + " of " +
                          std::to_string(a->decision.limit) + ", expected " +
                          std::to_string(expect_remaining) + " of " + std::to_string(limit);
            return;
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

// Calls that come while the most round trips are in flight wait and then go together, in
// one round trip.
TEST_F(RedisCoalesceTest, CallsQueuedBehindOneInFlightGoInOneRoundTrip) {
  redis::ClientOptions options;
  options.seeds = {server_->address()};
  options.timeout_ms = 10'000;
  auto client = std::make_shared<redis::Client>(options);
  RedisStore store(client, "queued", window(AlgorithmKind::kFixedWindow, 5, 600'000),
                   onWindowZero());
  ASSERT_TRUE(store.decide("warm-up", 0, 1));  // the library is loaded
  constexpr int kFollowers = 6;
  const int64_t trips_before = client->roundTrips();
  server_->freeze();
  constexpr int kFirst = redis::Client::kBatchesInFlight;
  std::vector<int> allowed(kFirst + kFollowers, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kFirst; ++t) {
    threads.emplace_back([&, t] {
      auto d = store.decide("k", 0, 1);
      allowed[t] = d ? d->allowed() : -2;
    });
  }
  // the first ones are sent (and unanswered) before the others come
  bool first_sent = eventually([&] { return client->roundTrips() == trips_before + kFirst; });
  for (int t = kFirst; t < kFirst + kFollowers; ++t) {
    threads.emplace_back([&, t] {
      auto d = store.decide("k", 0, 1);
      allowed[t] = d ? d->allowed() : -2;
    });
  }
  bool all_queued =
      eventually([&] { return client->waitingCalls() == static_cast<size_t>(kFollowers); });
  server_->thaw();
  for (auto& t : threads) t.join();
  ASSERT_TRUE(first_sent);
  ASSERT_TRUE(all_queued);
  EXPECT_EQ(client->roundTrips() - trips_before, kFirst + 1)
      << "the first ones alone, then the rest together";
  int admitted = 0;
  for (int a : allowed) {
    EXPECT_GE(a, 0);
    admitted += a == 1;
  }
  EXPECT_EQ(admitted, 5);
}

// A frozen server: every call, in flight or queued, ends with an error by its deadline, and
// once the server answers again so do the calls.
TEST_F(RedisCoalesceTest, AFrozenServerFailsEveryQueuedCall) {
  redis::ClientOptions options;
  options.seeds = {server_->address()};
  options.timeout_ms = 200;
  auto client = std::make_shared<redis::Client>(options);
  RedisStore store(client, "frozen", window(AlgorithmKind::kFixedWindow, 1000, 600'000),
                   onWindowZero());
  ASSERT_TRUE(store.decide("warm-up", 0, 1));
  server_->freeze();
  std::atomic<int> errors{0}, answered{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 3; ++i) (store.decide("k", 0, 1) ? answered : errors)++;
    });
  }
  for (auto& t : threads) t.join();
  server_->thaw();
  EXPECT_EQ(errors.load(), 24);
  EXPECT_EQ(answered.load(), 0);
  EXPECT_TRUE(eventually([&] { return store.decide("k", 0, 1).ok(); }));
}

// Stalls the server again and again (frozen 40 ms, then 10 ms awake) until destroyed: a
// server that is slow, not gone.
class Staller {
 public:
  explicit Staller(testing::RedisServer& server)
      : thread_([this, &server] {
          while (!stop_) {
            server.freeze();
            std::this_thread::sleep_for(std::chrono::milliseconds(40));
            server.thaw();
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
        }) {}
  ~Staller() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// One call of `command` on `key` by its own deadline: what it got, and when it returned.
struct Outcome {
  Result<std::vector<redis::Reply>> result = std::vector<redis::Reply>{};
  redis::Deadline deadline{};
  redis::Deadline returned{};
};

std::thread callIn(redis::Client& client, redis::Command command, redis::Deadline deadline,
                   Outcome& out) {
  return std::thread([&client, command = std::move(command), deadline, &out] {
    out.deadline = deadline;
    out.result = client.run({{command[1], command}}, deadline);
    out.returned = std::chrono::steady_clock::now();
  });
}

// A call with little time left shares a batch with one with much: the batch waits for the
// latest deadline, so the patient call is answered once the server is back, and the hurried
// one gives up at its own deadline rather than holding the other to it.
TEST_F(RedisCoalesceTest, EachCallOfABatchWaitsUntilItsOwnDeadline) {
  redis::ClientOptions options;
  options.seeds = {server_->address()};
  options.timeout_ms = 10'000;
  redis::Client client(options);
  ASSERT_TRUE(client.run({{"x", {"PING"}}}));
  const int64_t trips_before = client.roundTrips();
  server_->freeze();
  using std::chrono::milliseconds;
  auto now = std::chrono::steady_clock::now;
  // Two calls fill the round trips in flight and time out soon, so that the next two are
  // taken together into one batch while the server is still frozen.
  Outcome filler[2], hurried, patient;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.push_back(callIn(client, {"INCR", "filler" + std::to_string(i)},
                             now() + milliseconds(300), filler[i]));
  }
  const bool fillers_sent = eventually([&] { return client.roundTrips() == trips_before + 2; });
  threads.push_back(callIn(client, {"INCR", "hurried"}, now() + milliseconds(1000), hurried));
  threads.push_back(callIn(client, {"INCR", "patient"}, now() + milliseconds(30'000), patient));
  threads[2].join();  // the hurried call gives up while the server is still frozen
  server_->thaw();
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
  EXPECT_TRUE(fillers_sent);
  for (const Outcome& f : filler) EXPECT_FALSE(f.result.ok());
  EXPECT_FALSE(hurried.result.ok());
  // by its own deadline, give or take a scheduling delay (not the patient call's 30 s)
  EXPECT_LT(hurried.returned - hurried.deadline, milliseconds(5000));
  ASSERT_TRUE(patient.result.ok()) << patient.result.error().message;
  ASSERT_EQ(patient.result->size(), 1u);
  EXPECT_EQ((*patient.result)[0].integer, 1);
  EXPECT_LE(patient.returned, patient.deadline);
}

// A call that times out closes its own connection only: the server is slow, not gone, and
// the next call reuses another idle connection instead of opening one.
TEST_F(RedisCoalesceTest, ATimeoutKeepsThePoolsOtherConnections) {
  redis::ClientOptions options;
  options.seeds = {server_->address()};
  options.timeout_ms = 10'000;
  redis::Client client(options);
  auto now = std::chrono::steady_clock::now;
  // two idle connections: two calls in flight at once, each on its own
  server_->freeze();
  Outcome first, second;
  std::thread a = callIn(client, {"INCR", "a"}, now() + std::chrono::seconds(10), first);
  const bool first_sent = eventually([&] { return client.roundTrips() == 1; });
  std::thread b = callIn(client, {"INCR", "b"}, now() + std::chrono::seconds(10), second);
  const bool both_sent = eventually([&] { return client.roundTrips() == 2; });
  server_->thaw();
  a.join();
  b.join();
  ASSERT_TRUE(first_sent && both_sent);
  ASSERT_TRUE(first.result.ok() && second.result.ok());
  server_->freeze();
  auto late = client.run({{"t", {"INCR", "t"}}}, now() + std::chrono::milliseconds(200));
  server_->thaw();
  EXPECT_FALSE(late.ok());
  auto accepted = [&] {
    auto info = server_->command({"INFO", "stats"});
    EXPECT_TRUE(info.ok());
    const std::string name = "total_connections_received:";
    size_t at = info ? info->str.find(name) : std::string::npos;
    return at == std::string::npos ? -1 : std::stoll(info->str.substr(at + name.size()));
  };
  const int64_t before = accepted();
  ASSERT_TRUE(client.run({{"x", {"PING"}}}));
  EXPECT_EQ(accepted() - before, 1) << "only INFO's own connection: the call reused an idle one";
}

// A call whose deadline has passed by the time it would be written is not sent: Redis
// never runs it (no one would read what it did).
TEST_F(RedisCoalesceTest, ACallWhoseTimeIsGoneIsNotSent) {
  auto past = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  auto late = client_->run({{"late", {"INCR", "late"}}}, past);
  EXPECT_FALSE(late.ok());
  ASSERT_TRUE(client_->run({{"x", {"PING"}}}));  // the server has read all that was sent
  auto value = server_->command({"GET", "late"});
  ASSERT_TRUE(value);
  EXPECT_EQ(value->type, redis::Reply::Type::kNil);
}

// Against a server that stalls, threads whose calls have little time (many give up) and
// threads whose calls have much share batches: every answer a thread gets is its own key's,
// in order, and every patient call is answered.
TEST_F(RedisCoalesceTest, CallsThatGiveUpNeverGetOrTakeAnotherCallsReplies) {
  constexpr int kThreads = 8, kCalls = 40;
  constexpr int64_t kBase = 1'000'000;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(server_->command({"SET", "own-" + std::to_string(t), std::to_string(t * kBase)}));
  }
  std::vector<std::string> failures(kThreads);
  std::vector<int> errors(kThreads, 0);
  std::vector<int64_t> last(kThreads, 0);
  {
    Staller staller(*server_);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        const std::string key = "own-" + std::to_string(t);
        const auto budget = std::chrono::milliseconds(t % 2 == 0 ? 20'000 : 15);
        int64_t seen = t * kBase;
        for (int i = 0; i < kCalls; ++i) {
          auto got =
              client_->run({{key, {"INCR", key}}}, std::chrono::steady_clock::now() + budget);
          if (!got) {
            ++errors[t];
            continue;
          }
          int64_t value = got->size() == 1 ? (*got)[0].integer : -1;
          if (value <= seen || value > t * kBase + kCalls) {
            failures[t] = "call " + std::to_string(i) + " got " + std::to_string(value) +
                          " after " + std::to_string(seen);
            return;
          }
          seen = value;
        }
        last[t] = seen;
      });
    }
    for (auto& t : threads) t.join();
  }
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], "") << "thread " << t;
    if (t % 2 == 0) {
      EXPECT_EQ(errors[t], 0) << "thread " << t;
      EXPECT_EQ(last[t], t * kBase + kCalls) << "thread " << t;
    }
  }
}

// N threads x M requests against a limit L admit exactly L when the server is slow.
TEST_F(RedisCoalesceTest, ASlowServerStillAdmitsExactlyTheLimit) {
  constexpr int kThreads = 8, kRequests = 50, kLimit = 123;
  RedisStore store(client_, "slow", window(AlgorithmKind::kFixedWindow, kLimit, 600'000),
                   onWindowZero());
  ASSERT_TRUE(store.decide("warm-up", 0, 1));
  Tally tally;
  {
    Staller staller(*server_);
    tally = decideFromThreads(store, kThreads, kRequests);
  }
  EXPECT_EQ(tally.errors, 0);
  EXPECT_EQ(tally.admitted, kLimit);
}

}  // namespace
}  // namespace floodgate::http
