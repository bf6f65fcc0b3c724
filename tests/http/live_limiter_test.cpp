// SPDX-License-Identifier: MIT
// Swapping policy sets: state kept for unchanged policies, migrated per algorithm for changed
// limits (raising never rejects what the old limit admitted), invalid sets refused, checks in
// flight finishing on the old set, and the file watcher following a published file.
#include "floodgate/core/live_limiter.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "floodgate/core/config_parser.h"
#include "floodgate/fleet/atomic_file.h"
#include "floodgate/fleet/policy_document.h"
#include "floodgate/fleet/policy_watcher.h"
#include "floodgate/stores/state_migration.h"
#include "http/algorithm_harness.h"

namespace floodgate::http {
namespace {

using testing::bucket;
using testing::kMs;
using testing::window;

HttpConfig parse(const std::string& policies) {
  auto config = parseHttpConfigText("http:\n  policies:\n" + policies, "test.yaml");
  EXPECT_TRUE(config.ok()) << config.error().message;
  return config.ok() ? std::move(*config) : HttpConfig{};
}

std::string fixedWindow(const std::string& name, int limit) {
  return "    - {name: " + name +
         ", key: ip, algorithm: fixed_window, limit: " + std::to_string(limit) +
         ", window_ms: 60000}\n";
}

struct Live {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(1'000 * kMs);
  std::unique_ptr<LiveLimiter> live;

  explicit Live(const std::string& policies) {
    auto made = Limiter::create(parse(policies), clock);
    EXPECT_TRUE(made.ok());
    live = std::make_unique<LiveLimiter>(std::shared_ptr<Limiter>(std::move(*made)), "v1", clock);
  }
  bool admits(std::string_view peer = "192.0.2.1") {
    RequestInfo r;
    r.method = "GET";
    r.path = "/";
    r.peer = peer;
    return live->check(r).allowed();
  }
  int admitted(int tries) {
    int n = 0;
    for (int i = 0; i < tries; ++i) n += admits();
    return n;
  }
};

TEST(LiveLimiter, AnUnchangedPolicyKeepsItsStateWhenOthersChange) {
  Live l(fixedWindow("per-ip", 3));
  EXPECT_EQ(l.admitted(5), 3);
  ASSERT_TRUE(
      l.live->update(parse(fixedWindow("per-ip", 3) + fixedWindow("other", 100)), "v2").ok());
  EXPECT_EQ(l.live->version(), "v2");
  EXPECT_FALSE(l.admits()) << "the unchanged policy forgot what was used";
  EXPECT_EQ(l.live->updatesApplied(), 1);
}

TEST(LiveLimiter, ARefundGoesToTheSetThatDecided) {
  Live l(fixedWindow("per-ip", 1));
  RequestInfo r;
  r.method = "GET";
  r.path = "/";
  r.peer = "192.0.2.1";
  Verdict v = l.live->check(r);
  ASSERT_TRUE(v.allowed());
  // a new set with a new policy: the refund must reach per-ip, not the set now current
  ASSERT_TRUE(l.live->update(parse(fixedWindow("other", 1) + fixedWindow("per-ip", 1)), "v2").ok());
  l.live->refund(v);
  Verdict again = l.live->check(r);
  EXPECT_TRUE(again.allowed());
  ASSERT_EQ(again.decisions.size(), 2u);
  EXPECT_EQ(again.decisions[1].decision.remaining, 0);
  EXPECT_FALSE(l.admits());
}

TEST(LiveLimiter, ARaisedLimitAdmitsTheDifferenceAndALoweredOneAppliesAtOnce) {
  Live l(fixedWindow("per-ip", 3));
  EXPECT_EQ(l.admitted(3), 3);
  ASSERT_TRUE(l.live->update(parse(fixedWindow("per-ip", 5)), "v2").ok());
  EXPECT_EQ(l.admitted(5), 2) << "the 3 used count against the new limit of 5";
  ASSERT_TRUE(l.live->update(parse(fixedWindow("per-ip", 2)), "v3").ok());
  EXPECT_EQ(l.admitted(3), 0);
  EXPECT_TRUE(l.admits("192.0.2.9")) << "another client is under the new limit";
}

// check() remembers, per thread, the set it read last (without a lock): that memory must
// never hand one limiter's set to another, nor keep a set alive once swapped out.
TEST(LiveLimiter, EachLimiterDecidesOnItsOwnSetOnTheSameThread) {
  {
    Live gone(fixedWindow("per-ip", 1));
    EXPECT_TRUE(gone.admits());
  }
  Live a(fixedWindow("per-ip", 1));
  Live b(fixedWindow("per-ip", 5));
  EXPECT_TRUE(a.admits());
  EXPECT_EQ(b.admitted(5), 5);
  EXPECT_FALSE(a.admits());
}

TEST(LiveLimiter, ASetSwappedOutIsFreedWithItsLastVerdict) {
  Live l(fixedWindow("per-ip", 3));
  std::weak_ptr<Limiter> first = l.live->current();
  EXPECT_TRUE(l.admits());  // this thread has decided on the first set, and let go its verdict
  ASSERT_TRUE(l.live->update(parse(fixedWindow("per-ip", 5)), "v2").ok());
  EXPECT_TRUE(first.expired()) << "the first set outlived its last verdict";
  EXPECT_EQ(l.admitted(5), 4) << "decided on the new set (1 used of 5)";
}

TEST(LiveLimiter, AnInvalidSetIsRefusedAndTheLastGoodOneStays) {
  Live l(fixedWindow("per-ip", 3));
  EXPECT_EQ(l.admitted(3), 3);
  applyPolicyDocument(*l.live, "version: v2\nhttp: {policies: [{name: x, key: ip}]}\n",
                      "/run/p.yaml", [](const std::string&) {});
  EXPECT_EQ(l.live->updatesRefused(), 1);
  EXPECT_EQ(l.live->version(), "v1");
  EXPECT_NE(l.live->lastRefusal().find("needs an algorithm"), std::string::npos);
  EXPECT_FALSE(l.admits()) << "the old set, state and all, still decides";

  std::vector<std::string> lines;
  applyPolicyDocument(*l.live, "http: {policies: []}\n", "/run/p.yaml",
                      [&](const std::string& line) { lines.push_back(line); });
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].find('\n'), std::string::npos);
  EXPECT_NE(lines[0].find("refused the policies published at /run/p.yaml, keeping version v1"),
            std::string::npos)
      << lines[0];
}

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
const PolicySigning kSigning{"fg:policies", kSecret};

std::string signedText(uint64_t serial, int limit) {
  return renderSignedPolicyDocument(
             YAML::Load("http:\n  policies:\n" + fixedWindow("per-ip", limit))["http"], serial,
             kSigning)
      .text;
}

TEST(LiveLimiter, AnOlderSignedDocumentWrittenBackIsRefusedAsStale) {
  Live l(fixedWindow("per-ip", 3));
  std::vector<std::string> lines;
  auto log = [&](const std::string& line) { lines.push_back(line); };
  const std::string limited = signedText(100, 3), raised = signedText(200, 1000);
  applySignedPolicyDocument(*l.live, raised, "redis:fg:policies", kSigning, log);
  applySignedPolicyDocument(*l.live, signedText(300, 3), "redis:fg:policies", kSigning, log);
  ASSERT_EQ(l.live->serial(), 300u);
  EXPECT_EQ(l.live->updatesApplied(), 2);
  const std::string in_force = l.live->version();

  // An attacker saved the raised set and writes it back: it is older than the one in force.
  applySignedPolicyDocument(*l.live, raised, "redis:fg:policies", kSigning, log);
  applySignedPolicyDocument(*l.live, limited, "redis:fg:policies", kSigning, log);
  EXPECT_EQ(l.live->updatesRefused(PolicyRefusal::kStale), 2);
  EXPECT_EQ(l.live->version(), in_force);
  EXPECT_EQ(l.live->serial(), 300u);
  EXPECT_NE(lines.back().find("keeping version " + in_force +
                              " (stale): redis:fg:policies: "
                              "serial 100 is not newer than serial 300"),
            std::string::npos)
      << lines.back();

  // The document in force read again (every message, every reconnect) is no refusal; the
  // same set published again moves the serial on, so what came between becomes a replay.
  applySignedPolicyDocument(*l.live, signedText(300, 3), "redis:fg:policies", kSigning, log);
  EXPECT_EQ(l.live->updatesRefused(), 2);
  applySignedPolicyDocument(*l.live, signedText(400, 3), "redis:fg:policies", kSigning, log);
  EXPECT_EQ(l.live->serial(), 400u);
  EXPECT_EQ(l.live->updatesApplied(), 2) << "the same version is not built again";
  applySignedPolicyDocument(*l.live, signedText(350, 1000), "redis:fg:policies", kSigning, log);
  EXPECT_EQ(l.live->updatesRefused(PolicyRefusal::kStale), 3);

  // Unsigned and forged ones are counted by reason; none changes the set.
  applySignedPolicyDocument(*l.live, "version: x\nhttp: {policies: []}\n", "redis:fg:policies",
                            kSigning, log);
  std::string forged = signedText(500, 3);
  forged.replace(forged.find("limit: 3"), 8, "limit: 9999");
  applySignedPolicyDocument(*l.live, forged, "redis:fg:policies", kSigning, log);
  EXPECT_EQ(l.live->updatesRefused(PolicyRefusal::kUnsigned), 1);
  EXPECT_EQ(l.live->updatesRefused(PolicyRefusal::kBadSignature), 1);
  EXPECT_EQ(l.live->updatesRefused(), 5);
  EXPECT_EQ(l.live->version(), in_force);
  EXPECT_EQ(l.admitted(5), 3) << "the limit of 3 still decides";
}

TEST(LiveLimiter, ChecksInFlightFinishOnTheSetTheyStartedWith) {
  // keys spread over 4096 addresses never reach the limit: every check is admitted, so a
  // rejected one was decided on a set it did not start with (few enough keys that carrying
  // them to each of the 200 sets stays quick under a sanitizer on a busy machine)
  Live l(fixedWindow("per-ip", 1'000'000));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> checked{0}, invalid{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      std::vector<std::string> peers;
      for (int i = 0; i < 4096; ++i) {
        peers.push_back("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256));
      }
      RequestInfo r;
      r.method = "GET";
      r.path = "/";
      for (uint64_t n = 0; !stop; ++n) {
        r.peer = peers[n % peers.size()];
        Verdict v = l.live->check(r);
        // the verdict points into its set, which it keeps alive
        if (!v.allowed() || v.decisions.size() != 1 || v.decisions[0].policy->name != "per-ip") {
          ++invalid;
        }
        ++checked;
      }
    });
  }
  // each update waits for a check on the set before it, so checks and swaps interleave
  // however the threads are scheduled (a check that never comes fails the test, not hangs)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool interleaved = true;
  for (int i = 0; i < 200 && interleaved; ++i) {
    const int64_t before = checked.load();
    while (checked.load() == before && (interleaved = std::chrono::steady_clock::now() < deadline))
      std::this_thread::yield();
    EXPECT_TRUE(
        l.live->update(parse(fixedWindow("per-ip", 1'000'000 - i % 2)), std::to_string(i)).ok());
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_TRUE(interleaved) << "the checking threads made no progress in 30 s";
  EXPECT_GE(checked, 200);
  EXPECT_EQ(invalid, 0);
}

// For every algorithm: from many states, raising the limit (and the rate) never rejects a
// next request that the old parameters would have admitted.
TEST(StateMigration, RaisingNeverRejectsWhatTheOldLimitAdmitted) {
  const std::vector<testing::Raise> raises = testing::raisedLimits();
  std::mt19937_64 random(7);
  for (const testing::Raise& raise : raises) {
    auto from = *makeAlgorithm(raise.from);
    auto to = *makeAlgorithm(raise.to);
    SCOPED_TRACE(std::string(algorithmName(raise.from.kind)));
    int compared = 0, old_admitted = 0;
    for (int trial = 0; trial < 300; ++trial) {
      KeyState state;
      int64_t now = 10'000 * kMs;
      for (int i = 0, n = static_cast<int>(random() % 12); i < n; ++i) {
        now += static_cast<int64_t>(random() % 400) * kMs;
        from->decide(state, now, 1 + static_cast<int64_t>(random() % 2));
      }
      const int64_t swap_ns = now + static_cast<int64_t>(random() % 300) * kMs;
      std::optional<KeyState> migrated = migrateState(*from, *to, state, swap_ns);
      KeyState next = migrated ? *migrated : KeyState{};
      const int64_t at = swap_ns + static_cast<int64_t>(random() % 500) * kMs;
      const int64_t cost = 1 + static_cast<int64_t>(random() % 3);
      KeyState old_copy = state;
      bool old_admits = from->decide(old_copy, at, cost).allowed();
      bool new_admits = to->decide(next, at, cost).allowed();
      old_admitted += old_admits;
      ++compared;
      EXPECT_TRUE(!old_admits || new_admits) << "trial " << trial << " cost " << cost;
    }
    EXPECT_GT(old_admitted, 0);
    EXPECT_LT(old_admitted, compared) << "some states must be over the old limit";
  }
}

TEST(StateMigration, ALoweredBucketKeepsWhatWasUsedAndAnotherAlgorithmStartsFresh) {
  auto big = *makeAlgorithm(bucket(AlgorithmKind::kTokenBucket, 10, 1));
  auto small = *makeAlgorithm(bucket(AlgorithmKind::kTokenBucket, 4, 1));
  KeyState state;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(big->decide(state, 0, 1).allowed());
  KeyState lowered = *migrateState(*big, *small, state, 0);
  EXPECT_EQ(small->decide(lowered, 0, 1).remaining, 0) << "3 used of 4: one left";
  EXPECT_FALSE(small->decide(lowered, 0, 1).allowed());

  auto gcra = *makeAlgorithm(bucket(AlgorithmKind::kGcra, 10, 1));
  EXPECT_FALSE(migrateState(*big, *gcra, state, 0).has_value());
  auto longer = *makeAlgorithm(window(AlgorithmKind::kFixedWindow, 5, 2000));
  auto shorter = *makeAlgorithm(window(AlgorithmKind::kFixedWindow, 5, 1000));
  KeyState counted;
  longer->decide(counted, 0, 5);
  EXPECT_FALSE(migrateState(*longer, *shorter, counted, 0).has_value())
      << "counts of another window length mean nothing";
}

TEST(StateMigration, AMemoryStoreCarriesEveryBusyKeyAcross) {
  auto from_alg = *makeAlgorithm(bucket(AlgorithmKind::kGcra, 4, 1));
  auto to_alg = *makeAlgorithm(bucket(AlgorithmKind::kGcra, 8, 1));
  MemoryStore from(from_alg, {});
  MemoryStore to(to_alg, {});
  for (int k = 0; k < 100; ++k) {
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(from.decide("key" + std::to_string(k), 0, 1).ok());
  }
  migrateStore(from, *from_alg, to, *to_alg, 0);
  EXPECT_EQ(to.stats().keys, 100);
  for (int k = 0; k < 100; ++k) EXPECT_EQ(to.decide("key" + std::to_string(k), 0, 1)->remaining, 3);
}

TEST(PolicyFileWatcher, FollowsAFileReplacedByRenameAndRefusesABadOne) {
  char name[] = "/tmp/fg-watch-XXXXXX";
  std::string dir = mkdtemp(name);
  std::string path = dir + "/policies.yaml";
  auto render = [](int limit) {
    return renderPolicyDocument(
        YAML::Load("http:\n  policies:\n" + fixedWindow("per-ip", limit))["http"]);
  };
  PolicyDocument first = render(3);
  ASSERT_TRUE(writeFileAtomically(path, first.text).ok());
  auto clock = std::make_shared<ManualClock>(1'000 * kMs);
  auto live = makeLiveLimiter(first.text, path, clock);
  ASSERT_TRUE(live.ok()) << live.error().message;
  std::vector<std::string> lines;
  std::mutex lines_mutex;
  auto watcher = PolicyFileWatcher::start(path, *live, [&](const std::string& line) {
    std::lock_guard lock(lines_mutex);
    lines.push_back(line);
  });
  ASSERT_TRUE(watcher.ok()) << watcher.error().message;

  auto waitFor = [&](auto done) {
    for (int i = 0; i < 100 && !done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return done();
  };
  PolicyDocument second = render(5);
  ASSERT_TRUE(writeFileAtomically(path, second.text).ok());
  EXPECT_TRUE(waitFor([&] { return (*live)->version() == second.version; }));
  ASSERT_TRUE(writeFileAtomically(path, "version: x\nhttp: {policies: [{name: y}]}\n").ok());
  EXPECT_TRUE(waitFor([&] { return (*live)->updatesRefused() == 1; }));
  EXPECT_EQ((*live)->version(), second.version);
  EXPECT_EQ((*live)->updatesRefused(PolicyRefusal::kInvalid), 1);

  // A file others may write is refused whatever it holds (its content could be anyone's).
  PolicyDocument third = render(7);
  std::string open_file = dir + "/open.yaml";
  std::ofstream(open_file) << third.text;
  ASSERT_EQ(chmod(open_file.c_str(), 0666), 0);
  ASSERT_EQ(rename(open_file.c_str(), path.c_str()), 0);
  EXPECT_TRUE(waitFor([&] { return (*live)->updatesRefused(PolicyRefusal::kUnsafeFile) == 1; }));
  EXPECT_EQ((*live)->version(), second.version);
  auto unsafe = readPolicyFile(path);
  ASSERT_FALSE(unsafe.ok());
  EXPECT_NE(unsafe.error().message.find("is writable by every user"), std::string::npos)
      << unsafe.error().message;
  ASSERT_EQ(chmod(path.c_str(), 0620), 0);
  EXPECT_NE(readPolicyFile(path).error().message.find("is writable by its group"),
            std::string::npos);
  watcher->reset();
  // (The watcher is gone: these are read by hand.) Neither a symlink (to an older document, say)
  // nor a pipe (that would hang the open) is what the controller publishes.
  const std::string elsewhere = dir + "/elsewhere.yaml";
  std::ofstream(elsewhere) << third.text;
  std::filesystem::remove(path);
  std::filesystem::create_symlink(elsewhere, path);
  EXPECT_FALSE(readPolicyFile(path).ok());
  std::filesystem::remove(path);
  ASSERT_EQ(mkfifo(path.c_str(), 0644), 0);
  auto pipe = readPolicyFile(path);
  ASSERT_FALSE(pipe.ok());
  EXPECT_NE(pipe.error().message.find("is not a regular file"), std::string::npos)
      << pipe.error().message;
  std::filesystem::remove(path);
  std::filesystem::remove_all(dir);
  std::lock_guard lock(lines_mutex);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("now enforcing policies version " + second.version), std::string::npos);
  EXPECT_NE(lines[1].find("refused"), std::string::npos);
  EXPECT_NE(lines[2].find("(unsafe_file)"), std::string::npos) << lines[2];
}

TEST(PolicyFileOwner, OnlyRootOrTheServiceItselfMayOwnThePublishedFile) {
  struct stat file {};
  file.st_mode = S_IFREG | 0644;
  file.st_uid = 0;
  EXPECT_TRUE(checkPolicyFileOwner(file, "/run/p.yaml").ok());
  file.st_uid = geteuid();
  EXPECT_TRUE(checkPolicyFileOwner(file, "/run/p.yaml").ok());
  file.st_uid = geteuid() + 4242;
  Status other = checkPolicyFileOwner(file, "/run/p.yaml");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("is owned by uid " + std::to_string(geteuid() + 4242) +
                                       ", neither root nor this service"),
            std::string::npos)
      << other.error().message;
}

}  // namespace
}  // namespace floodgate::http
