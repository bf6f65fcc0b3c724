// SPDX-License-Identifier: MIT
// Decisions as Redis functions: one FCALL each, the library reloaded after the server lost
// it, two versions side by side in one server, and EVALSHA on a server without FCALL.
#include <gtest/gtest.h>

#include "floodgate/redis/redis_store.h"
#include "floodgate/redis/scripts.h"
#include "http/algorithm_harness.h"
#include "redis/redis_fixture.h"

namespace floodgate::http {
namespace {

using testing::bucket;
using testing::calls;
using testing::RedisServer;
using testing::window;

constexpr int64_t kMs = 1'000'000;

// The fixed windows here decide at virtual time 0 (admitted() passes it): on that time, not
// Redis's clock, a key stays in one window for the whole test, whenever it runs (a minute of
// Redis's clock could end between two decisions, and the count start over). The GCRA buckets
// stay on Redis's clock: at 0.001 units a second, none refills during a test.
RedisStoreOptions onWindowZero() {
  RedisStoreOptions options;
  options.virtual_time = true;
  return options;
}

// Of `n` decisions on key "k", those admitted (a failed one is not, and fails the test).
int admitted(RedisStore& store, int n) {
  int yes = 0;
  for (int i = 0; i < n; ++i) {
    auto d = store.decide("k", 0, 1);
    EXPECT_TRUE(d) << (d ? "" : d.error().message);
    yes += d && d->allowed();
  }
  return yes;
}

// The names of the libraries the server holds.
std::vector<std::string> libraries(const RedisServer& server) {
  std::vector<std::string> names;
  auto list = server.command({"FUNCTION", "LIST"});
  EXPECT_TRUE(list.ok());
  if (!list) return names;
  for (const redis::Reply& library : list->elements) {
    // [library_name, <name>, engine, LUA, functions, [...]]
    for (size_t i = 0; i + 1 < library.elements.size(); i += 2) {
      if (library.elements[i].str == "library_name") names.push_back(library.elements[i + 1].str);
    }
  }
  return names;
}

class RedisFunctionsTest : public testing::RedisServerTest {
 protected:
  void SetUp() override {
    testing::RedisServerTest::SetUp();
    if (server_ == nullptr) return;  // skipped
    ASSERT_TRUE(server_->command({"FUNCTION", "FLUSH"}));
    ASSERT_TRUE(server_->command({"CONFIG", "RESETSTAT"}));
  }
};

// The first decision finds no library, loads it, and is retried; from then on every
// decision is one FCALL and no script runs.
TEST_F(RedisFunctionsTest, DecisionsAreOneFcallEachAfterOneLoad) {
  RedisStore store(client_, "p", window(AlgorithmKind::kFixedWindow, 5, 60'000), onWindowZero());
  EXPECT_EQ(admitted(store, 8), 5);
  EXPECT_EQ(calls(*server_, "fcall"), 8 + 1);
  EXPECT_EQ(calls(*server_, "function|load"), 1);
  EXPECT_EQ(calls(*server_, "evalsha") + calls(*server_, "eval"), 0);
  EXPECT_FALSE(client_->scriptsOnly());
  EXPECT_EQ(libraries(*server_), std::vector<std::string>{redis::functionLibrary().name});
}

// A server whose functions were flushed (FUNCTION FLUSH) or that lost them with a restart
// answers "Function not found": the library is loaded again, the call retried once, and
// the decision is what it would have been.
TEST_F(RedisFunctionsTest, FlushedFunctionsAreLoadedAgain) {
  RedisStore store(client_, "p", window(AlgorithmKind::kFixedWindow, 5, 60'000), onWindowZero());
  EXPECT_EQ(admitted(store, 3), 3);
  ASSERT_TRUE(server_->command({"FUNCTION", "FLUSH"}));
  ASSERT_TRUE(libraries(*server_).empty());
  EXPECT_EQ(admitted(store, 4), 2) << "the count kept in the key is still there";
  EXPECT_EQ(calls(*server_, "function|load"), 2);
  // FLUSHALL empties the keys; whether or not it takes the functions along, decisions go on.
  ASSERT_TRUE(server_->command({"FLUSHALL"}));
  EXPECT_EQ(admitted(store, 6), 5);
  EXPECT_FALSE(client_->scriptsOnly());
}

TEST_F(RedisFunctionsTest, ARestartedServerGetsTheLibraryAgain) {
  RedisStore store(client_, "p", window(AlgorithmKind::kFixedWindow, 5, 60'000), onWindowZero());
  EXPECT_EQ(admitted(store, 2), 2);
  server_->kill();
  ASSERT_TRUE(server_->restart());
  // The pool's connection died with the server: the first call after it fails.
  for (int i = 0; i < 3 && !store.decide("warm-up", 0, 1); ++i) {
  }
  ASSERT_EQ(libraries(*server_).size(), 1u);
  EXPECT_EQ(admitted(store, 6), 5) << "an empty server counts from zero";
  EXPECT_FALSE(client_->scriptsOnly());
}

// A decision's answer of another shape (nils, text: a Redis, or a proxy, that is not what
// it should be) is a store failure, never an admission (an absent integer would read 0,
// "allowed").
TEST_F(RedisFunctionsTest, AnAnswerOfAnotherShapeIsAFailureNotAnAdmission) {
  const std::string name = redis::functionLibrary().name;
  const std::string function = redis::decideScript(AlgorithmKind::kFixedWindow).function;
  for (const char* answer :
       {"{false, false, false, false, false, false, false}", "{'0', '0', '0', '0', '0', '0', '0'}",
        "{0, 0, 0, 0, 0, 0}", "{7, 0, 0, 0, 0, 0, 0}", "{0, 0, 0, 0, 0, 9223372036854775, 0}"}) {
    SCOPED_TRACE(answer);
    const std::string library = "#!lua name=" + name + "\nredis.register_function('" + function +
                                "', function(KEYS, ARGV) return " + answer + " end)\n";
    auto loaded = server_->command({"FUNCTION", "LOAD", "REPLACE", library});
    ASSERT_TRUE(loaded.ok() && !loaded->isError()) << (loaded.ok() ? loaded->str : "");
    RedisStore store(client_, "p", window(AlgorithmKind::kFixedWindow, 5, 60'000), onWindowZero());
    auto decided = store.decide("k", 0, 1);
    ASSERT_FALSE(decided.ok()) << "admitted on an answer of another shape";
    EXPECT_NE(decided.error().message.find("something unexpected"), std::string::npos)
        << decided.error().message;
  }
}

// Two versions of floodgate in one fleet share a Redis: each has its own library, named by
// its version, and its own function names; loading one replaces nothing of the other's.
TEST_F(RedisFunctionsTest, TwoVersionsKeepTheirOwnLibraries) {
  const std::string other =
      "#!lua name=floodgate_0000000000000000\n"
      "redis.register_function('fg_0000000000000000_decide_fixed_window',"
      " function(KEYS, ARGV) return 'other version' end)\n";
  ASSERT_TRUE(server_->command({"FUNCTION", "LOAD", "REPLACE", other}));
  RedisStore store(client_, "p", window(AlgorithmKind::kFixedWindow, 5, 60'000), onWindowZero());
  EXPECT_EQ(admitted(store, 6), 5);
  std::vector<std::string> names = libraries(*server_);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"floodgate_0000000000000000",
                                             redis::functionLibrary().name}));
  auto answer = server_->command({"FCALL", "fg_0000000000000000_decide_fixed_window", "0"});
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->str, "other version");
  // Our functions are all ours: the version is in every name.
  const std::string version =
      redis::functionLibrary().name.substr(std::string("floodgate_").size());
  for (const redis::Script* s :
       {&redis::decideScript(AlgorithmKind::kGcra), &redis::decideTogetherScript(),
        &redis::refundScript(AlgorithmKind::kSlidingWindowLog),
        &redis::syncScript(AlgorithmKind::kTokenBucket), &redis::heartbeatScript()}) {
    EXPECT_EQ(s->function.rfind("fg_" + version + "_", 0), 0u) << s->function;
  }
}

// The library's version follows its text: a change to any script is a new version.
TEST(RedisFunctionLibrary, ItsNameIsAHashOfItsText) {
  const redis::FunctionLibrary& library = redis::functionLibrary();
  ASSERT_EQ(library.name.size(), std::string("floodgate_").size() + 16);
  EXPECT_EQ(library.code.rfind("#!lua name=" + library.name + "\n", 0), 0u);
  EXPECT_NE(library.code.find("'" + redis::decideTogetherScript().function + "'"),
            std::string::npos);
  EXPECT_NE(redis::decideScript(AlgorithmKind::kGcra).function,
            redis::decideScript(AlgorithmKind::kTokenBucket).function);
  EXPECT_EQ(redis::decideScript(AlgorithmKind::kGcra).function,
            redis::decideScript(AlgorithmKind::kLeakyBucket).function);
}

// A server without FCALL (as one older than Redis 7 answers: an unknown command) is served
// by EVALSHA scripts, exactly as before functions.
TEST(RedisWithoutFunctions, FallsBackToScripts) {
  if (!testing::haveRedis()) GTEST_SKIP() << "redis-server is not installed";
  auto server = RedisServer::start({"--rename-command", "FCALL", ""});
  if (!server) GTEST_SKIP() << "redis-server did not start";
  auto client = testing::clientOf(*server);
  RedisStore store(client, "p", bucket(AlgorithmKind::kGcra, 4, 0.001));
  EXPECT_EQ(admitted(store, 7), 4);
  EXPECT_TRUE(client->scriptsOnly());
  EXPECT_EQ(calls(*server, "evalsha"), 7);
  EXPECT_EQ(calls(*server, "eval"), 1) << "the first EVALSHA found no script";
}

// A user not allowed FCALL nor FUNCTION (ACL) is answered NOPERM: its decisions are made by
// EVALSHA scripts, exactly, rather than failed.
TEST(RedisWithoutFunctions, AUserNotAllowedFunctionsIsServedByScripts) {
  if (!testing::haveRedis()) GTEST_SKIP() << "redis-server is not installed";
  auto server = RedisServer::start();
  if (!server) GTEST_SKIP() << "redis-server did not start";
  ASSERT_TRUE(server->command({"ACL", "SETUSER", "default", "-fcall", "-fcall_ro", "-function"}));
  auto client = testing::clientOf(*server);
  RedisStore store(client, "p", bucket(AlgorithmKind::kGcra, 4, 0.001));
  EXPECT_EQ(admitted(store, 7), 4);
  EXPECT_TRUE(client->scriptsOnly());
  EXPECT_EQ(calls(*server, "evalsha"), 7);
  EXPECT_EQ(calls(*server, "fcall"), 0);
}

// A user allowed FCALL but not FUNCTION LOAD, on a server without the library: scripts too.
TEST(RedisWithoutFunctions, AUserNotAllowedToLoadTheLibraryIsServedByScripts) {
  if (!testing::haveRedis()) GTEST_SKIP() << "redis-server is not installed";
  auto server = RedisServer::start();
  if (!server) GTEST_SKIP() << "redis-server did not start";
  ASSERT_TRUE(server->command({"ACL", "SETUSER", "default", "-function"}));
  auto client = testing::clientOf(*server);
  RedisStore store(client, "p", window(AlgorithmKind::kFixedWindow, 3, 60'000), onWindowZero());
  EXPECT_EQ(admitted(store, 5), 3);
  EXPECT_TRUE(client->scriptsOnly());
}

// An error raised inside a function (a key of another type) is that decision's answer: it
// does not make the client give up functions.
TEST_F(RedisFunctionsTest, AnErrorInsideAFunctionKeepsFunctions) {
  RedisStore store(client_, "p", bucket(AlgorithmKind::kGcra, 4, 0.001));
  ASSERT_TRUE(store.decide("ok", 0, 1));
  ASSERT_TRUE(server_->command({"HSET", "fg:{p:k}:gcra:v3", "f", "v"}));
  auto d = store.decide("k", 0, 1);
  EXPECT_FALSE(d);
  EXPECT_FALSE(client_->scriptsOnly());
  EXPECT_EQ(calls(*server_, "evalsha") + calls(*server_, "eval"), 0);
}

// A Redis whose Lua `struct` packs 8-byte integers short (a 32-bit build: it converts through
// a 4-byte C long) is refused: the check every script and function calls first raises an
// error there, stood in for by a `struct` that keeps the low 32 bits of what it unpacks. On
// this server it passes, and every script, and every function of the library, calls it first.
TEST_F(RedisFunctionsTest, ARedisThatPacksEightByteIntegersShortIsRefused) {
  const std::string check = std::string(redis::wordSizeCheck()) + "return check_word_size()\n";
  const std::string short_struct =
      "local real = struct\n"
      "local struct = {pack = real.pack, unpack = function(f, s)\n"
      "  return real.unpack(f, s) % 4294967296 end}\n";
  auto refused = server_->command({"EVAL", short_struct + check, "0"});
  ASSERT_TRUE(refused.ok());
  EXPECT_TRUE(refused->isError()) << refused->str;
  EXPECT_NE(refused->str.find("needs a 64-bit Redis"), std::string::npos) << refused->str;

  auto passed = server_->command({"EVAL", check, "0"});
  ASSERT_TRUE(passed.ok());
  EXPECT_FALSE(passed->isError()) << passed->str;

  const std::string library = redis::functionLibrary().code;
  auto count = [&library](std::string_view text) {
    size_t n = 0;
    for (size_t at = library.find(text); at != std::string::npos; at = library.find(text, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count(redis::wordSizeCheck()), 1u);
  EXPECT_GT(count("redis.register_function{"), 0u);
  EXPECT_EQ(count("redis.register_function{"), count("function(KEYS, ARGV)\ncheck_word_size()\n"));
  EXPECT_EQ(count("flags = {'no-writes'}"), 2u) << "the stream's reads, and they alone";
  const redis::Script* scripts[] = {
      &redis::decideScript(AlgorithmKind::kGcra), &redis::decideTogetherScript(),
      &redis::refundScript(AlgorithmKind::kTokenBucket),
      &redis::syncScript(AlgorithmKind::kFixedWindow), &redis::heartbeatScript()};
  for (const redis::Script* script : scripts) {
    EXPECT_TRUE(script->main.starts_with("check_word_size()\n")) << script->function;
    EXPECT_TRUE(script->body.starts_with(redis::wordSizeCheck())) << script->function;
  }
}

}  // namespace
}  // namespace floodgate::http
