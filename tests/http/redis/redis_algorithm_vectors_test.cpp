// SPDX-License-Identifier: MIT
// The shared vectors of tests/data/algorithms/, replayed by the Lua scripts in a real Redis
// (a private redis-server) on the vectors' own clock.
#include <gtest/gtest.h>

#include "floodgate/core/algorithm.h"
#include "floodgate/redis/redis_store.h"
#include "http/algorithm_harness.h"
#include "redis/redis_server.h"

namespace floodgate::http {
namespace {

using test::AlgorithmVector;
using test::VectorArrival;
using testing::paramsOf;
using testing::RedisServer;

TEST(RedisAlgorithmVectors, TheScriptsDecideEveryArrivalAsTheVectorsSay) {
  if (!testing::haveRedis()) GTEST_SKIP() << "redis-server is not installed";
  auto server = RedisServer::start();
  if (!server) GTEST_SKIP() << "redis-server did not start";
  redis::ClientOptions options;
  options.seeds = {server->address()};
  options.timeout_ms = 2000;
  auto client = std::make_shared<redis::Client>(options);
  int replayed = 0;
  for (const AlgorithmVector& v : test::loadAlgorithmVectors(FLOODGATE_ALGORITHM_VECTORS)) {
    RedisStoreOptions store_options;
    store_options.virtual_time = true;  // the scripts read the vector's clock, not TIME
    RedisStore store(client, "vector-" + v.name, paramsOf(v), store_options);
    for (const VectorArrival& a : v.arrivals) {
      auto d = store.decide("k", (v.originMs() + a.at_ms) * testing::kMs, a.cost);
      ASSERT_TRUE(d.ok()) << v.where(a) << ": " << d.error().message;
      EXPECT_EQ(d->allowed(), a.admit) << v.where(a);
      // the vectors decide by their clock alone: a key written to expire 1 ms (real time)
      // later must not vanish before the next arrival of the same virtual instant
      Status persisted = server->persistKeys({store_options.prefix + ":{vector-" + v.name + ":*"});
      ASSERT_TRUE(persisted) << persisted.error().message;
    }
    ++replayed;
  }
  EXPECT_GE(replayed, 9);
}

}  // namespace
}  // namespace floodgate::http
