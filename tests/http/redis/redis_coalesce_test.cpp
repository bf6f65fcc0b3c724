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
  RedisStore store(client_, "shared", window(AlgorithmKind::kFixedWindow, kLimit, 600'000));
  std::atomic<int> admitted{0}, errors{0};
  const int64_t trips_before = client_->roundTrips();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRequests; ++i) {
        auto d = store.decide("hot", 0, 1);
        if (!d) {
          ++errors;
          continue;
        }
        admitted += d->allowed();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(admitted.load(), kLimit);
  EXPECT_LE(client_->roundTrips() - trips_before, int64_t{kThreads} * kRequests);
  auto state = server_->command({"GET", "fg:{shared:hot}:fixed_window:v2"});
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
        client_, "own", window(AlgorithmKind::kFixedWindow, 100 + 7 * t, 600'000)));
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
  RedisStore store(client, "queued", window(AlgorithmKind::kFixedWindow, 5, 600'000));
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
  RedisStore store(client, "frozen", window(AlgorithmKind::kFixedWindow, 1000, 600'000));
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

}  // namespace
}  // namespace floodgate::http
