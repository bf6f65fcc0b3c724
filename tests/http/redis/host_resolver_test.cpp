// SPDX-License-Identifier: MIT
// Host names are looked up on a thread of their own, and no call waits past its deadline
// for one, however long the lookup takes.
#include "floodgate/redis/host_resolver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "floodgate/redis/client.h"
#include "redis/redis_server.h"

namespace floodgate::http::redis {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A lookup the test answers when it chooses: what a DNS server that does not answer is
// until it does. It counts its calls.
struct HeldLookup {
  std::shared_ptr<std::promise<Result<std::string>>> answer =
      std::make_shared<std::promise<Result<std::string>>>();
  std::shared_future<Result<std::string>> answered = answer->get_future().share();
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);

  HostLookup lookup() const {
    return [answered = answered, calls = calls](const std::string&) {
      ++*calls;
      return answered.get();
    };
  }
};

TEST(HostResolver, ACallWaitsForAHeldLookupNoLongerThanItsDeadline) {
  HeldLookup held;
  HostResolver resolver(held.lookup());
  // The lookup stays held until the call has returned: a call that waited for it would
  // never return, so returning at all is the property, whatever the timer's resolution.
  auto first = resolver.resolve("redis.internal", steady_clock::now() + milliseconds(50));
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.error().message.find("cannot resolve redis.internal: no answer within"),
            std::string::npos)
      << first.error().message;
  // a second call while the lookup is still held starts no second lookup
  EXPECT_FALSE(resolver.resolve("redis.internal", steady_clock::now() + milliseconds(1)).ok());
  EXPECT_EQ(held.calls->load(), 1);

  held.answer->set_value(std::string("192.0.2.10"));
  // the answer serves every call from now on, without a wait or a lookup
  auto later = steady_clock::now() + std::chrono::seconds(10);
  auto found = resolver.resolve("redis.internal", later);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(*found, "192.0.2.10");
  EXPECT_EQ(*resolver.resolve("redis.internal", steady_clock::now()), "192.0.2.10")
      << "a deadline already past: the kept answer needs no wait";
  EXPECT_EQ(held.calls->load(), 1);
}

TEST(HostResolver, AFailedLookupIsGivenUntilItsRetryAndANumericAddressIsNotLookedUp) {
  std::atomic<int> calls = 0;
  HostResolver resolver([&](const std::string& host) -> Result<std::string> {
    ++calls;
    return Error::failure("cannot resolve " + host + ": Name or service not known");
  });
  auto failed = resolver.resolve("nowhere.invalid", steady_clock::now() + std::chrono::seconds(10));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "cannot resolve nowhere.invalid: Name or service not known");
  // within kRetry of the failure (1 s: this runs well within it, or the count is 2 at most)
  EXPECT_FALSE(
      resolver.resolve("nowhere.invalid", steady_clock::now() + std::chrono::seconds(10)).ok());
  EXPECT_LE(calls.load(), 2);
  for (const char* numeric : {"192.0.2.1", "2001:db8::1", "::1"}) {
    EXPECT_EQ(*resolver.resolve(numeric, steady_clock::now()), numeric);
  }
  EXPECT_LE(calls.load(), 2);
}

// A DNS server that stops answering, or answers with a failure, takes away no address that
// worked: a refresh (after 30 s, or after a server could not be reached) hands out the kept
// address at once, and keeps it when the lookup fails.
TEST(HostResolver, AFailedRefreshKeepsTheAddressThatWorked) {
  auto refresh_answer = std::make_shared<std::promise<Result<std::string>>>();
  std::shared_future<Result<std::string>> refreshed = refresh_answer->get_future().share();
  std::atomic<int> calls = 0;
  HostResolver resolver([&calls, refreshed](const std::string&) -> Result<std::string> {
    if (++calls == 1) return std::string("192.0.2.10");
    return refreshed.get();
  });
  const auto later = steady_clock::now() + std::chrono::seconds(10);
  ASSERT_EQ(*resolver.resolve("redis.internal", later), "192.0.2.10");
  resolver.refresh("redis.internal");
  EXPECT_EQ(*resolver.resolve("redis.internal", later), "192.0.2.10");
  EXPECT_EQ(calls.load(), 1) << "a refresh within kRetry of the lookup asks nothing again";
  // (a sleep lasts at least what it is asked for: past kRetry whatever the timer)
  std::this_thread::sleep_for(HostResolver::kRetry + milliseconds(10));
  resolver.refresh("redis.internal");
  // the refresh is held: the kept address comes back at once all the same
  auto during = resolver.resolve("redis.internal", steady_clock::now());
  ASSERT_TRUE(during.ok()) << during.error().message;
  EXPECT_EQ(*during, "192.0.2.10");
  for (int i = 0; i < 500 && calls.load() < 2; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(calls.load(), 2) << "the refresh's lookup started";
  refresh_answer->set_value(Error::failure("cannot resolve redis.internal: SERVFAIL"));
  for (int i = 0; i < 50; ++i) {
    auto after = resolver.resolve("redis.internal", steady_clock::now());
    ASSERT_TRUE(after.ok()) << i << ": " << after.error().message;
    EXPECT_EQ(*after, "192.0.2.10");
    std::this_thread::sleep_for(milliseconds(10));
  }
}

TEST(HostResolver, AScopedLinkLocalAddressIsNumeric) {
  HostResolver resolver([](const std::string& host) -> Result<std::string> {
    return Error::failure("looked up " + host);
  });
  EXPECT_EQ(*resolver.resolve("fe80::1%eth0", steady_clock::now()), "fe80::1%eth0");
}

TEST(HostResolver, TheSystemLookupFindsLocalhost) {
  auto found = lookUpHost("localhost");
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_TRUE(*found == "127.0.0.1" || *found == "::1") << *found;
}

// A client given a host name connects through the resolver, to a real server.
TEST(HostResolver, AClientConnectsToARedisByName) {
  if (!testing::haveRedis()) GTEST_SKIP() << "redis-server is not installed";
  auto server = testing::RedisServer::start();
  if (!server) GTEST_SKIP() << "redis-server did not start";
  ClientOptions options;
  auto address = Address::parse("localhost:" + std::to_string(server->port()));
  ASSERT_TRUE(address.ok()) << address.error().message;
  options.seeds = {*address};
  Client client(options);
  auto replies = client.run({{"k", {"PING"}}});
  ASSERT_TRUE(replies.ok()) << replies.error().message;
  EXPECT_EQ((*replies)[0].str, "PONG");
}

}  // namespace
}  // namespace floodgate::http::redis
