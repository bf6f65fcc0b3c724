// SPDX-License-Identifier: MIT
// Policy composition: matching, keys, all-or-nothing with refunds, the binding policy.
#include "floodgate/core/limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "floodgate/core/config_parser.h"
#include "floodgate/core/headers.h"
#include "floodgate/stores/memory_store.h"
#include "floodgate/stores/store_backend.h"

namespace floodgate::http {
namespace {

constexpr int64_t kMs = 1'000'000;

struct Fixture {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(1'000 * kMs);
  std::unique_ptr<Limiter> limiter;

  explicit Fixture(const std::string& yaml, StoreFactory factory = {}) {
    auto config = parseHttpConfigText(yaml, "test.yaml");
    EXPECT_TRUE(config.ok()) << config.error().message;
    auto made = Limiter::create(std::move(*config), clock, std::move(factory));
    EXPECT_TRUE(made.ok());
    limiter = std::move(*made);
  }
};

RequestInfo request(std::string_view method, std::string_view path, std::string_view peer,
                    std::vector<std::pair<std::string_view, std::string_view>> headers = {}) {
  RequestInfo r;
  r.method = method;
  r.path = path;
  r.peer = peer;
  r.headers = std::move(headers);
  return r;
}

constexpr const char* kTwoPolicies = R"(http:
  trusted_proxies: [10.0.0.0/8]
  client_header: x-forwarded-for
  policies:
    - name: per-key
      key: header:X-API-Key
      algorithm: fixed_window
      limit: 5
      window_ms: 60000
    - name: per-ip
      key: ip
      algorithm: fixed_window
      limit: 2
      window_ms: 60000
)";

TEST(Limiter, AllOrNothingRefundsThePolicyThatAdmitted) {
  Fixture f(kTwoPolicies);
  auto req = [](std::string_view peer) {
    return request("GET", "/x", peer, {{"x-api-key", "k1"}});
  };
  EXPECT_TRUE(f.limiter->check(req("198.51.100.1")).allowed());
  EXPECT_TRUE(f.limiter->check(req("198.51.100.1")).allowed());
  // per-ip is exhausted; per-key admitted this one and must get it back.
  for (int i = 0; i < 10; ++i) {
    Verdict v = f.limiter->check(req("198.51.100.1"));
    EXPECT_FALSE(v.allowed());
    EXPECT_EQ(v.binding.policy, "per-ip");
    EXPECT_EQ(v.violated, (std::vector<std::string_view>{"per-ip"}));
    ASSERT_EQ(v.decisions.size(), 2u);
    EXPECT_EQ(v.decisions[0].decision.remaining, 3);  // refunded, shown as after the refund
  }
  // The same API key from other addresses still has 3 left: the rejections cost nothing.
  EXPECT_TRUE(f.limiter->check(req("198.51.100.2")).allowed());
  EXPECT_TRUE(f.limiter->check(req("198.51.100.2")).allowed());
  Verdict third = f.limiter->check(req("198.51.100.3"));
  EXPECT_TRUE(third.allowed());
  EXPECT_EQ(third.binding.policy, "per-key");  // fewest remaining: 0
  EXPECT_EQ(third.binding.remaining, 0);
  Verdict over = f.limiter->check(req("198.51.100.3"));
  EXPECT_FALSE(over.allowed());
  EXPECT_EQ(over.binding.policy, "per-key");
}

TEST(Limiter, RefundGivesBackAnAdmittedVerdictOnceAndARejectedOneNotAgain) {
  Fixture f(kTwoPolicies);
  auto req = [] { return request("GET", "/x", "198.51.100.1", {{"x-api-key", "k1"}}); };
  Verdict refused = f.limiter->check(req());
  ASSERT_TRUE(refused.allowed());
  EXPECT_EQ(refused.binding.policy, "per-ip");
  EXPECT_EQ(refused.binding.remaining, 1);
  f.limiter->refund(refused);
  EXPECT_EQ(refused.binding.remaining, 2);  // shown as after the refund
  EXPECT_EQ(refused.decisions[0].decision.remaining, 5);
  EXPECT_FALSE(refused.decisions[0].reserved);
  f.limiter->refund(refused);  // nothing more to give back

  // per-ip still admits its whole limit of 2, and no more
  EXPECT_TRUE(f.limiter->check(req()).allowed());
  EXPECT_TRUE(f.limiter->check(req()).allowed());
  Verdict over = f.limiter->check(req());
  EXPECT_FALSE(over.allowed());
  f.limiter->refund(over);  // refunded by check() already
  EXPECT_FALSE(f.limiter->check(req()).allowed());
  // per-key gave back the refused request and both rejections: 3 of 5 left for k1
  auto from = [](std::string_view peer) {
    return request("GET", "/x", peer, {{"x-api-key", "k1"}});
  };
  EXPECT_TRUE(f.limiter->check(from("198.51.100.2")).allowed());
  EXPECT_TRUE(f.limiter->check(from("198.51.100.2")).allowed());
  EXPECT_TRUE(f.limiter->check(from("198.51.100.3")).allowed());
  Verdict spent = f.limiter->check(from("198.51.100.3"));
  EXPECT_FALSE(spent.allowed());
  EXPECT_EQ(spent.binding.policy, "per-key");
}

TEST(Limiter, BindingRejectionIsTheLongestWaitAndNamesEveryViolatedPolicy) {
  Fixture f(R"(http:
  retry_after_jitter: 0  # the exact wait (jitter: retry_jitter_test.cpp)
  policies:
    - name: short
      key: ip
      algorithm: fixed_window
      limit: 1
      window_ms: 1000
    - name: long
      key: ip
      algorithm: fixed_window
      limit: 1
      window_ms: 60000
)");
  EXPECT_TRUE(f.limiter->check(request("GET", "/", "192.0.2.1")).allowed());
  Verdict v = f.limiter->check(request("GET", "/", "192.0.2.1"));
  EXPECT_FALSE(v.allowed());
  EXPECT_EQ(v.binding.policy, "long");
  EXPECT_EQ(v.binding.retry_after_ns, 59'000 * kMs);
  EXPECT_EQ(v.violated, (std::vector<std::string_view>{"short", "long"}));
}

TEST(Limiter, ARefundThatKeepsUnitsGivesBackOnlyTheRestAndALaterOneTheRemainder) {
  Fixture f(R"(http:
  policies:
    - name: orders
      match: {path_prefix: /orders}
      key: ip
      algorithm: fixed_window
      limit: 10
      window_ms: 60000
      routes:
        - match: {path_prefix: /orders}
          cost: 5
    - name: per-ip
      key: ip
      algorithm: sliding_window_log
      limit: 3
      window_ms: 60000
)");
  Verdict bad = f.limiter->check(request("POST", "/orders", "192.0.2.1"));
  ASSERT_TRUE(bad.allowed());
  EXPECT_EQ(bad.decisions[0].decision.remaining, 5);
  f.limiter->refund(bad, 1);  // a malformed order: one unit per policy, not the route's 5
  EXPECT_EQ(bad.decisions[0].decision.remaining, 9);
  EXPECT_EQ(bad.decisions[0].cost, 1);
  EXPECT_TRUE(bad.decisions[0].reserved);
  EXPECT_EQ(bad.decisions[1].decision.remaining, 2);  // cost 1 already: nothing back
  f.limiter->refund(bad, 1);                          // nothing more beyond the unit kept
  EXPECT_EQ(bad.decisions[0].decision.remaining, 9);

  Verdict next = f.limiter->check(request("POST", "/orders", "192.0.2.1"));
  EXPECT_EQ(next.decisions[0].decision.remaining, 4) << "10 - 1 kept - 5";
  EXPECT_EQ(next.decisions[1].decision.remaining, 1);
  f.limiter->refund(bad);  // what was kept goes back too
  EXPECT_FALSE(bad.decisions[0].reserved);
  EXPECT_TRUE(f.limiter->check(request("POST", "/orders", "192.0.2.1")).allowed());
  EXPECT_TRUE(f.limiter->check(request("GET", "/x", "192.0.2.1")).allowed());
  EXPECT_FALSE(f.limiter->check(request("GET", "/x", "192.0.2.1")).allowed())
      << "per-ip: 3 requests, the refunded one given back";
}

// A refund on the limiter's clock, not at the check's reading: two orders of cost 50 checked at
// 0 trickle their bodies; at 10 s the bucket is full again and 100 are spent; then both end
// in a 400 that keeps one unit each. Their charge refilled long ago, so nothing comes back,
// where 49 each would let 98 more through at once.
TEST(Limiter, ARefundLongAfterTheCheckGivesBackNothingTheBucketRefilled) {
  for (std::string algorithm : {"gcra", "token_bucket", "leaky_bucket"}) {
    SCOPED_TRACE(algorithm);
    Fixture f(R"(http:
  policies:
    - name: api
      key: ip
      algorithm: )" +
              algorithm + R"(
      capacity: 100
      rate_per_s: 10
      routes:
        - match: {methods: [POST], path_prefix: /api/orders}
          cost: 50
)");
    auto order = [&f] { return f.limiter->check(request("POST", "/api/orders", "192.0.2.1")); };
    Verdict first = order();
    Verdict second = order();
    ASSERT_TRUE(first.allowed() && second.allowed());
    f.clock->advanceMs(10'000);
    ASSERT_TRUE(order().allowed());
    ASSERT_TRUE(order().allowed());
    f.limiter->refund(first, 1);
    f.limiter->refund(second, 1);
    EXPECT_FALSE(f.limiter->check(request("GET", "/api/items", "192.0.2.1")).allowed())
        << "the late refunds gave back units the bucket had refilled";
  }
}

// A queued request's units drain only once its turn comes: shed after waiting out its delay
// (its class full by then), it gets back all it took, not its cost less the wait.
TEST(Limiter, ARefundAfterAQueuedRequestsWaitGivesBackWhatItsTurnHasNotDrained) {
  Fixture f(R"(http:
  policies:
    - {name: queue, key: ip, algorithm: leaky_bucket, capacity: 10, rate_per_s: 1}
)");
  auto get = [&f] { return f.limiter->check(request("GET", "/api/items", "192.0.2.1")); };
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(get().allowed()) << i;
  Verdict last = get();  // the tenth: its turn 9 s from now
  ASSERT_TRUE(last.allowed());
  ASSERT_EQ(last.binding.delay_ns, 9'000'000'000);
  EXPECT_FALSE(get().allowed()) << "the queue is full";
  f.clock->advanceMs(9'000);  // its wait is over: the nine before it drained, not its own
  f.limiter->refund(last);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(get().allowed()) << "room for " << i;
  EXPECT_FALSE(get().allowed()) << "ten, no more: the whole queue";
}

TEST(Limiter, MatchesMethodsAndPathsAndChargesRouteCosts) {
  Fixture f(R"(http:
  retry_after_jitter: 0  # the exact wait (jitter: retry_jitter_test.cpp)
  policies:
    - name: api
      match: {methods: [POST], path_prefix: /api}
      key: ip
      algorithm: token_bucket
      capacity: 10
      rate_per_s: 1
      routes:
        - match: {path_prefix: /api/export}
          cost: 10
)");
  EXPECT_FALSE(f.limiter->check(request("GET", "/api/x", "192.0.2.1")).limited());
  EXPECT_FALSE(f.limiter->check(request("POST", "/other", "192.0.2.1")).limited());
  Verdict one = f.limiter->check(request("POST", "/api/x", "192.0.2.1"));
  EXPECT_TRUE(one.limited());
  EXPECT_EQ(one.binding.remaining, 9);
  Verdict heavy = f.limiter->check(request("POST", "/api/export", "192.0.2.1"));
  EXPECT_FALSE(heavy.allowed());
  EXPECT_EQ(heavy.binding.retry_after_ns, 1000 * kMs);
  f.clock->advanceMs(1000);
  EXPECT_TRUE(f.limiter->check(request("POST", "/api/export", "192.0.2.1")).allowed());
}

// A server serves "//downloads/x", "/./downloads/x" and "/x/../downloads/x" (cpp-httplib's
// mounts among them) as /downloads/x: each meets the /downloads policy and pays its route's
// cost, and a path that resolves elsewhere pays what it resolves to.
TEST(Limiter, PathsAreMatchedAndChargedAsSentAndInTheirNormalForm) {
  Fixture f(R"(http:
  policies:
    - name: downloads
      match: {path_prefix: /downloads}
      key: ip
      algorithm: fixed_window
      limit: 100
      window_ms: 60000
      routes:
        - match: {path_prefix: /downloads/big.iso}
          cost: 10
    - name: admin
      match: {path_prefix: /admin/}
      key: ip
      algorithm: fixed_window
      limit: 100
      window_ms: 60000
)");
  int64_t remaining = 100;
  for (const char* path :
       {"/downloads/big.iso", "//downloads/big.iso", "/./downloads/big.iso",
        "/x/../downloads/big.iso", "/downloads//big.iso", "/downloads/./big.iso",
        "/../downloads/big.iso", "downloads/big.iso", "http://example.com/downloads/big.iso"}) {
    Verdict v = f.limiter->check(request("GET", path, "192.0.2.1"));
    remaining -= 10;
    ASSERT_EQ(v.decisions.size(), 1u) << path;
    EXPECT_EQ(v.decisions[0].decision.policy, "downloads") << path;
    EXPECT_EQ(v.decisions[0].cost, 10) << path;
    EXPECT_EQ(v.binding.remaining, remaining) << path;
  }
  // under /downloads as sent, under /admin in normal form: a server may resolve either (a
  // "/downloads/(.*)" route as sent, a mount in normal form), so both policies apply
  Verdict elsewhere = f.limiter->check(request("GET", "/downloads/../admin/users", "192.0.2.1"));
  ASSERT_EQ(elsewhere.decisions.size(), 2u);
  EXPECT_EQ(elsewhere.decisions[0].decision.policy, "downloads");
  EXPECT_EQ(elsewhere.decisions[1].decision.policy, "admin");
  // "/downloads/big.iso/.." is the directory /downloads/ in normal form, but the route's as
  // sent: the higher cost of the two
  Verdict directory = f.limiter->check(request("GET", "/downloads/big.iso/..", "192.0.2.1"));
  ASSERT_EQ(directory.decisions.size(), 1u);
  EXPECT_EQ(directory.decisions[0].cost, 10);
  Verdict dot = f.limiter->check(request("GET", "/downloads/big.iso/../x", "192.0.2.1"));
  ASSERT_EQ(dot.decisions.size(), 1u);
  EXPECT_EQ(dot.decisions[0].cost, 10) << "a cost as sent is not walked around by a '..'";

  // case and the trailing slash are kept: /Downloads is another route, "/admin" not "/admin/"
  EXPECT_FALSE(f.limiter->check(request("GET", "//Downloads/big.iso", "192.0.2.1")).limited());
  EXPECT_FALSE(f.limiter->check(request("GET", "/x/../admin", "192.0.2.1")).limited());
  EXPECT_TRUE(f.limiter->check(request("GET", "/x/../admin/.", "192.0.2.1")).limited());
}

// A spelling that does not meet a policy adds none of its costs: "//downloads/thumbs/a.png"
// (served from a mount as /downloads/thumbs/a.png) pays the thumbnails' cost, not the
// policy's own cost that its sent spelling, meeting no route, would name.
TEST(Limiter, OnlyTheSpellingsAPolicyAppliesByNameItsCost) {
  Fixture f(R"(http:
  policies:
    - name: downloads
      match: {path_prefix: /downloads}
      key: ip
      algorithm: fixed_window
      limit: 100
      window_ms: 60000
      cost: 10
      routes:
        - match: {path_prefix: /downloads/thumbs/}
          cost: 1
)");
  for (const char* path : {"/downloads/thumbs/a.png", "//downloads/thumbs/a.png"}) {
    Verdict v = f.limiter->check(request("GET", path, "192.0.2.1"));
    ASSERT_EQ(v.decisions.size(), 1u) << path;
    EXPECT_EQ(v.decisions[0].cost, 1) << path;
  }
  EXPECT_EQ(f.limiter->check(request("GET", "//downloads/big.iso", "192.0.2.1")).decisions[0].cost,
            10);
}

// HEAD runs the GET handler: it meets a GET policy and pays a GET route's cost.
TEST(Limiter, HeadIsLimitedAndChargedAsGet) {
  Fixture f(R"(http:
  policies:
    - name: reads
      match: {methods: [GET], path_prefix: /api}
      key: ip
      algorithm: token_bucket
      capacity: 20
      rate_per_s: 1
      routes:
        - match: {methods: [GET], path_prefix: /api/reports}
          cost: 20
)");
  Verdict head = f.limiter->check(request("HEAD", "/api/reports", "192.0.2.1"));
  EXPECT_TRUE(head.allowed());
  EXPECT_TRUE(head.limited());
  EXPECT_EQ(head.binding.remaining, 0);
  EXPECT_FALSE(f.limiter->check(request("HEAD", "/api/items", "192.0.2.1")).allowed());
  EXPECT_FALSE(f.limiter->check(request("GET", "/api/items", "192.0.2.1")).allowed());
  EXPECT_FALSE(f.limiter->check(request("POST", "/api/items", "192.0.2.1")).limited());
}

// A key header sent twice with different values: whichever line the service reads, the
// holder of k1 adding a junk line must not be charged anywhere but k1, so the request is
// refused (400) and charges the key nothing; the address is charged one unit, as for a
// malformed request, so that sending such requests without end meets the per-IP limit.
TEST(Limiter, AKeyHeaderSentTwiceWithDifferentValuesIsRefusedAndChargesTheKeyNothing) {
  Fixture f(R"(http:
  policies:
    - name: per-key
      key: header:X-API-Key
      algorithm: fixed_window
      limit: 2
      window_ms: 60000
    - name: per-ip
      key: ip
      algorithm: fixed_window
      limit: 25
      window_ms: 60000
      cost: 3
)");
  for (int i = 0; i < 10; ++i) {
    const std::string junk = "junk-" + std::to_string(i);
    for (const auto& [first, second] :
         {std::pair<std::string, std::string>{"k1", junk}, {junk, "k1"}}) {
      Verdict v = f.limiter->check(
          request("GET", "/", "192.0.2.1", {{"X-API-Key", first}, {"x-api-key", second}}));
      EXPECT_FALSE(v.allowed());
      EXPECT_EQ(v.binding.outcome, Outcome::kAmbiguousKey);
      EXPECT_EQ(v.binding.policy, "per-key");
      EXPECT_EQ(statusFor(v), 400);
      EXPECT_FALSE(v.reportable());
      EXPECT_EQ(v.violated, std::vector<std::string_view>{"per-key"});
    }
  }
  // k1 sent once has its 2; the address was charged a unit a request (20 of 25), not 3
  EXPECT_TRUE(
      f.limiter->check(request("GET", "/", "192.0.2.2", {{"X-API-Key", " k1 "}})).allowed());
  EXPECT_TRUE(f.limiter->check(request("GET", "/", "192.0.2.2", {{"X-API-Key", "k1"}})).allowed());
  EXPECT_EQ(
      f.limiter->check(request("GET", "/", "192.0.2.2", {{"X-API-Key", "k1"}})).binding.outcome,
      Outcome::kRejected);
  Verdict by_address = f.limiter->check(request("GET", "/", "192.0.2.1"));
  ASSERT_EQ(by_address.decisions.size(), 1u);
  EXPECT_EQ(by_address.decisions[0].decision.remaining, 25 - 20 - 3);
  // with 2 of 25 left, two more such requests take them; the next is the address's
  // excess: 429, and reportable, whatever its key header says
  auto twice = [&] {
    return f.limiter->check(
        request("GET", "/", "192.0.2.1", {{"X-API-Key", "a"}, {"X-API-Key", "b"}}));
  };
  EXPECT_EQ(twice().binding.outcome, Outcome::kAmbiguousKey);
  EXPECT_EQ(twice().binding.outcome, Outcome::kAmbiguousKey);
  Verdict over = twice();
  EXPECT_EQ(over.binding.outcome, Outcome::kRejected);
  EXPECT_EQ(over.binding.policy, "per-ip");
  EXPECT_EQ(statusFor(over), 429);
  EXPECT_TRUE(over.reportable());
}

// The same key sent twice names one key: it is charged once, to that key.
TEST(Limiter, AKeyHeaderSentTwiceWithOneValueIsChargedToIt) {
  Fixture f(R"(http:
  policies:
    - name: per-key
      key: header:X-API-Key
      algorithm: fixed_window
      limit: 2
      window_ms: 60000
)");
  Verdict v = f.limiter->check(
      request("GET", "/", "192.0.2.1", {{"X-API-Key", "k1"}, {"X-API-Key", " k1"}}));
  ASSERT_TRUE(v.allowed());
  ASSERT_EQ(v.decisions.size(), 1u);
  EXPECT_EQ(v.decisions[0].key, "k1");
  EXPECT_EQ(v.decisions[0].decision.remaining, 1);
}

// A limiter with one policy keyed by Authorization, 2 requests a minute.
constexpr const char* kPerAuthorization = R"(http:
  policies:
    - name: per-login
      key: header:Authorization
      algorithm: fixed_window
      limit: 2
      window_ms: 60000
)";

// How many of the requests, one per Authorization value of `spellings`, are admitted.
int admittedOf(Fixture& f, std::initializer_list<const char*> spellings) {
  int admitted = 0;
  for (const char* spelling : spellings) {
    admitted +=
        f.limiter->check(request("GET", "/", "192.0.2.1", {{"authorization", spelling}})).allowed();
  }
  return admitted;
}

// Spellings of one Basic credential that servers decode alike ("alice:secret", for a
// decoder that stops at the first '=' or character outside the alphabet) are refused as
// ambiguous, not given a quota each: the canonical spelling keeps its whole quota, and each
// refusal costs the address one unit, so sending them without end meets the per-IP limit.
TEST(Limiter, BasicCredentialsSpelledAnotherWayAreRefusedAndGetNoQuota) {
  Fixture f(R"(http:
  policies:
    - name: per-login
      key: header:Authorization
      algorithm: fixed_window
      limit: 2
      window_ms: 60000
    - name: per-ip
      key: ip
      algorithm: fixed_window
      limit: 8
      window_ms: 60000
)");
  for (const char* spelling :
       {"Basic YWxpY2U6c2VjcmV0!1", "Basic YWxpY2U6c2VjcmV0!2", "Basic YWxpY2U6c2VjcmV0=AAAA",
        "basic  YWxpY2U6c2VjcmV0=", "Basic YWxp Y2U6c2VjcmV0"}) {
    Verdict v = f.limiter->check(request("GET", "/", "192.0.2.1", {{"Authorization", spelling}}));
    EXPECT_EQ(v.binding.outcome, Outcome::kAmbiguousKey) << spelling;
    EXPECT_EQ(v.binding.policy, "per-login");
    EXPECT_EQ(statusFor(v), 400);
    EXPECT_FALSE(v.reportable());
  }
  // the canonical spelling, beside a non-canonical line, is ambiguous too
  EXPECT_EQ(f.limiter
                ->check(request("GET", "/", "192.0.2.1",
                                {{"Authorization", "Basic YWxpY2U6c2VjcmV0"},
                                 {"Authorization", "Basic YWxpY2U6c2VjcmV0!1"}}))
                .binding.outcome,
            Outcome::kAmbiguousKey);
  // alice:secret has its 2 and no more; the address paid a unit for each refusal (6 of 8)
  EXPECT_EQ(admittedOf(f, {"Basic YWxpY2U6c2VjcmV0", "Basic YWxpY2U6c2VjcmV0"}), 2);
  Verdict over = f.limiter->check(
      request("GET", "/", "192.0.2.2", {{"Authorization", "Basic YWxpY2U6c2VjcmV0"}}));
  EXPECT_EQ(over.binding.outcome, Outcome::kRejected);
  EXPECT_EQ(over.binding.policy, "per-login");
  // the address has none left: the next refusal is its excess, 429 and reportable
  Verdict excess = f.limiter->check(
      request("GET", "/", "192.0.2.1", {{"Authorization", "Basic YWxpY2U6c2VjcmV0!3"}}));
  EXPECT_EQ(excess.binding.outcome, Outcome::kRejected);
  EXPECT_EQ(excess.binding.policy, "per-ip");
  EXPECT_TRUE(excess.reportable());
}

// A JWT's signature with junk after it, or another last character of the same bytes, is
// refused as ambiguous; the token as issued keeps its quota.
TEST(Limiter, AJwtSpelledAnotherWayIsRefusedAndGetsNoQuota) {
  Fixture f(kPerAuthorization);
  const std::string token =
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.LXEWQrcmsEQBYnyp-6wy9chTD7GQPMTbAiWHF5IaSIE";
  for (const std::string& spelling :
       {token + "!1", token + "=AAAA", token.substr(0, token.size() - 1) + "F"}) {
    Verdict v = f.limiter->check(
        request("GET", "/", "192.0.2.1", {{"Authorization", "Bearer " + spelling}}));
    EXPECT_EQ(v.binding.outcome, Outcome::kAmbiguousKey) << spelling;
  }
  const std::string bearer = "Bearer " + token;
  EXPECT_EQ(admittedOf(f, {bearer.c_str(), bearer.c_str(), bearer.c_str()}), 2);
}

// An Authorization scheme is case-insensitive and its spaces are one or more: a server takes
// `Bearer T`, `bearer T` and `BEARER  T` for one token, so they are one key, not a bucket each.
TEST(Limiter, AuthorizationSpelledAnotherWayIsTheSameKey) {
  Fixture f(kPerAuthorization);
  EXPECT_EQ(admittedOf(f, {"Bearer T0k", "bearer T0k", "BEARER \t T0k", " beAreR T0k "}), 2);
  // the token itself is case-sensitive: another token has its own quota
  EXPECT_TRUE(f.limiter->check(request("GET", "/", "192.0.2.1", {{"Authorization", "Bearer t0k"}}))
                  .allowed());
  // and two spellings of one token sent together are one key, not an ambiguous request
  EXPECT_EQ(
      f.limiter
          ->check(request("GET", "/", "192.0.2.1",
                          {{"Authorization", "Bearer t0k"}, {"Authorization", "bearer  t0k"}}))
          .binding.outcome,
      Outcome::kAllowed);
}

// A policy over prefixes of clients: a /24 of IPv4 clients, a /48 of IPv6 ones (one
// subscriber rotating /64s) share one key, beside the per-client policy. Only the
// per-client policy's refusal is the client's own excess, worth reporting.
TEST(Limiter, APolicyOverPrefixesKeysEachPrefixOnce) {
  Fixture f(R"(http:
  policies:
    - name: per-client
      key: ip
      algorithm: fixed_window
      limit: 100
      window_ms: 60000
    - name: per-prefix
      key: ip
      ipv4_prefix: 24
      ipv6_prefix: 48
      algorithm: fixed_window
      limit: 2
      window_ms: 60000
)");
  Verdict first = f.limiter->check(request("GET", "/", "192.0.2.1"));
  ASSERT_TRUE(first.allowed());
  ASSERT_EQ(first.decisions.size(), 2u);
  EXPECT_EQ(first.decisions[0].key, "192.0.2.1");
  EXPECT_EQ(first.decisions[1].key, "192.0.2.0/24");
  EXPECT_TRUE(f.limiter->check(request("GET", "/", "192.0.2.200")).allowed());
  Verdict third = f.limiter->check(request("GET", "/", "192.0.2.77"));
  EXPECT_EQ(third.binding.outcome, Outcome::kRejected);
  EXPECT_EQ(third.binding.policy, "per-prefix");
  EXPECT_FALSE(third.reportable()) << "the /24 as a whole drained it, not this client";
  EXPECT_TRUE(f.limiter->check(request("GET", "/", "192.0.3.1")).allowed()) << "another /24";

  for (const char* rotated : {"2001:db8:1:1::1", "2001:db8:1:ffff::9"}) {
    Verdict v = f.limiter->check(request("GET", "/", rotated));
    ASSERT_TRUE(v.allowed()) << rotated;
    EXPECT_EQ(v.decisions[1].key, "2001:db8:1::/48");
  }
  Verdict v6 = f.limiter->check(request("GET", "/", "2001:db8:1:7::1"));
  EXPECT_EQ(v6.binding.policy, "per-prefix") << "a fresh /64 of the same /48";
  EXPECT_FALSE(v6.allowed());
  EXPECT_EQ(v6.client_key, "2001:db8:1:7::/64");

  // IPv4 clients through a NAT46 translator: each its own client, their /24 one prefix
  Verdict nat = f.limiter->check(request("GET", "/", "64:ff9b::203.0.113.7"));
  ASSERT_TRUE(nat.allowed());
  EXPECT_EQ(nat.client_key, "64:ff9b::cb00:7107");
  EXPECT_EQ(nat.decisions[0].key, "64:ff9b::cb00:7107");
  EXPECT_EQ(nat.decisions[1].key, "64:ff9b::cb00:7100/120");
}

TEST(Limiter, AClientOverItsOwnLimitIsReportableBesideAPrefixPolicy) {
  Fixture f(R"(http:
  policies:
    - name: per-client
      key: ip
      algorithm: fixed_window
      limit: 1
      window_ms: 60000
    - name: per-prefix
      key: ip
      ipv4_prefix: 24
      algorithm: fixed_window
      limit: 100
      window_ms: 60000
)");
  ASSERT_TRUE(f.limiter->check(request("GET", "/", "192.0.2.1")).allowed());
  Verdict over = f.limiter->check(request("GET", "/", "192.0.2.1"));
  EXPECT_EQ(over.binding.policy, "per-client");
  EXPECT_TRUE(over.reportable());
}

TEST(Limiter, CostAboveTheBurstIsItsOwnOutcome) {
  Fixture f(R"(http:
  policies:
    - name: small
      key: ip
      algorithm: gcra
      capacity: 5
      rate_per_s: 1
      cost: 6
)");
  Verdict v = f.limiter->check(request("GET", "/", "192.0.2.1"));
  EXPECT_EQ(v.binding.outcome, Outcome::kCostExceedsBurst);
  EXPECT_EQ(v.binding.policy, "small");
}

TEST(Limiter, KeysFromHeaderUserAndTrustedProxy) {
  Fixture f(R"(http:
  trusted_proxies: [10.0.0.1]
  client_header: x-forwarded-for
  policies:
    - name: per-user
      key: user
      algorithm: fixed_window
      limit: 1
      window_ms: 1000
    - name: per-ip
      key: ip
      algorithm: fixed_window
      limit: 100
      window_ms: 1000
)");
  RequestInfo anonymous = request("GET", "/", "10.0.0.1", {{"X-Forwarded-For", "203.0.113.4"}});
  Verdict v = f.limiter->check(anonymous);
  EXPECT_EQ(v.client_ip, "203.0.113.4");
  ASSERT_EQ(v.decisions.size(), 1u);  // no user: the per-user policy does not apply
  EXPECT_EQ(v.decisions[0].key, "203.0.113.4");

  RequestInfo alice = anonymous;
  alice.user = "alice";
  EXPECT_TRUE(f.limiter->check(alice).allowed());
  EXPECT_FALSE(f.limiter->check(alice).allowed());
  RequestInfo bob = anonymous;
  bob.user = "bob";
  EXPECT_TRUE(f.limiter->check(bob).allowed());
}

TEST(Limiter, ForgedForwardedForFromAnUntrustedPeerDoesNotChooseTheKey) {
  Fixture f(kTwoPolicies);
  for (int i = 0; i < 2; ++i) {
    std::string forged = "198.51.100." + std::to_string(i);
    auto v = f.limiter->check(request("GET", "/", "203.0.113.66", {{"X-Forwarded-For", forged}}));
    EXPECT_TRUE(v.allowed());
    EXPECT_EQ(v.client_ip, "203.0.113.66");
  }
  EXPECT_FALSE(
      f.limiter->check(request("GET", "/", "203.0.113.66", {{"X-Forwarded-For", "1.1.1.1"}}))
          .allowed());
}

// Behind a proxy that appends only X-Forwarded-For (nginx's and HAProxy's default), a
// client's own Forwarded or X-Real-IP header is never read.
TEST(Limiter, OnlyTheConfiguredHeaderNamesTheClient) {
  Fixture f(R"(http:
  trusted_proxies: [10.0.0.1]
  client_header: x-forwarded-for
  policies:
    - name: per-ip
      key: ip
      algorithm: fixed_window
      limit: 2
      window_ms: 60000
)");
  for (const char* forged : {"for=192.0.2.1", "for=unknown", "for=10.0.0.1", "for=192.0.2.2"}) {
    Verdict v = f.limiter->check(request(
        "GET", "/", "10.0.0.1",
        {{"Forwarded", forged}, {"X-Real-IP", "192.0.2.9"}, {"X-Forwarded-For", "203.0.113.4"}}));
    EXPECT_EQ(v.client_ip, "203.0.113.4") << forged;
    EXPECT_EQ(v.client_key, "203.0.113.4") << forged;
  }
}

TEST(Limiter, ClientsThatCannotBeToldShareOneKeyAndAreNeverReportable) {
  Fixture f(R"(http:
  trusted_proxies: [10.0.0.0/8]
  client_header: x-forwarded-for
  policies:
    - name: per-ip
      key: ip
      algorithm: fixed_window
      limit: 2
      window_ms: 60000
)");
  // every hop trusted, a hop that is not an address, no header at all: one shared key
  const std::vector<std::vector<std::pair<std::string_view, std::string_view>>> cases = {
      {{"X-Forwarded-For", "10.1.1.1"}}, {{"X-Forwarded-For", "unknown"}}, {}};
  for (const auto& headers : cases) {
    Verdict v = f.limiter->check(request("GET", "/", "10.0.0.2", headers));
    EXPECT_TRUE(v.client_ip.empty());
    EXPECT_TRUE(v.client_key.empty());  // nothing to report, so nobody to ban
    ASSERT_EQ(v.decisions.size(), 1u);
    EXPECT_EQ(v.decisions[0].key, kUnknownClientKey);
  }
  EXPECT_FALSE(f.limiter->check(request("GET", "/", "10.0.0.2", {})).allowed());
  // a real client behind the same proxy has its own bucket
  EXPECT_TRUE(
      f.limiter->check(request("GET", "/", "10.0.0.2", {{"X-Forwarded-For", "198.51.100.1"}}))
          .allowed());
}

TEST(Limiter, AnIpv6ClientRotatingInsideItsPrefixIsOneClient) {
  Fixture f(R"(http:
  ipv6_prefix: 64
  policies:
    - name: per-ip
      key: ip
      algorithm: fixed_window
      limit: 3
      window_ms: 60000
)");
  int admitted = 0;
  for (int i = 1; i <= 10; ++i) {
    std::string peer = "2001:db8:7:7::" + std::to_string(i);
    Verdict v = f.limiter->check(request("GET", "/", peer));
    EXPECT_EQ(v.client_ip, peer);
    EXPECT_EQ(v.client_key, "2001:db8:7:7::/64");
    admitted += v.allowed() ? 1 : 0;
  }
  EXPECT_EQ(admitted, 3);
  EXPECT_TRUE(f.limiter->check(request("GET", "/", "2001:db8:7:8::1")).allowed());
  EXPECT_EQ(dynamic_cast<MemoryStore&>(f.limiter->store(0)).stats().keys, 2);
}

// Only a client's own excess at its address may get it reported: someone else draining a
// shared API key must not get the key's other users banned.
TEST(Limiter, OnlyARejectionByAnIpPolicyIsReportable) {
  Fixture f(kTwoPolicies);  // per-key: 5 a minute; per-ip: 2 a minute
  auto from = [&](const char* peer) {
    return f.limiter->check(request("GET", "/", peer, {{"X-API-Key", "shared"}}));
  };
  for (int i = 0; i < 5; ++i) from(("198.51.100." + std::to_string(i)).c_str());
  Verdict drained = from("198.51.100.9");  // the key is spent; this address did nothing
  EXPECT_FALSE(drained.allowed());
  EXPECT_FALSE(drained.reportable());
  EXPECT_TRUE(f.limiter->check(request("GET", "/", "198.51.100.1")).allowed());  // its 2nd
  Verdict own = f.limiter->check(request("GET", "/", "198.51.100.1"));           // its 3rd: per-ip
  EXPECT_FALSE(own.allowed());
  EXPECT_TRUE(own.reportable());
  EXPECT_FALSE(f.limiter->check(request("GET", "/", "198.51.100.2")).reportable())
      << "its 2nd request, admitted";
}

// A store that is down, to exercise the failure modes.
class DownStore final : public Store {
 public:
  Result<Decision> decide(std::string_view, int64_t, int64_t) override {
    return Error::failure("store unreachable");
  }
  void refund(std::string_view, int64_t, int64_t, int64_t) override { ++refunds; }
  int refunds = 0;
};

TEST(Limiter, FailureModeOpenAdmitsAndClosedRejects) {
  const char* yaml = R"(http:
  policies:
    - name: open
      key: ip
      algorithm: gcra
      capacity: 5
      rate_per_s: 1
      failure_mode: open
    - name: closed
      key: ip
      algorithm: gcra
      capacity: 5
      rate_per_s: 1
      failure_mode: closed
)";
  Fixture f(yaml, [](const PolicyConfig&, std::shared_ptr<const Algorithm>) {
    return std::make_unique<DownStore>();
  });
  Verdict v = f.limiter->check(request("GET", "/", "192.0.2.1"));
  EXPECT_EQ(v.binding.outcome, Outcome::kStoreUnavailable);
  EXPECT_EQ(v.binding.policy, "closed");
  EXPECT_EQ(v.violated, (std::vector<std::string_view>{"closed"}));
  EXPECT_TRUE(v.decisions[0].decision.allowed());
  EXPECT_FALSE(v.decisions[0].reserved);  // nothing recorded, so nothing to refund
}

TEST(Limiter, ManyThreadsThroughTwoPoliciesAdmitExactlyTheTighterLimit) {
  // The per-key budget (300) is shared by two addresses each allowed 200: all-or-nothing
  // with refunds must never let more than 300 through, however threads interleave, and must
  // give every refused reservation back, so 300 are reached once the contention is over.
  Fixture f(R"(http:
  policies:
    - name: per-key
      key: header:X-API-Key
      algorithm: token_bucket
      capacity: 300
      rate_per_s: 0.001
    - name: per-ip
      key: ip
      algorithm: sliding_window_log
      limit: 200
      window_ms: 3600000
)");
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::string_view peer = t % 2 == 0 ? "192.0.2.1" : "192.0.2.2";
      for (int i = 0; i < 500; ++i) {
        if (f.limiter->check(request("GET", "/", peer, {{"X-API-Key", "shared"}})).allowed()) {
          admitted.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(admitted.load(), 300);
  // A reservation another thread held for a moment (and then refunded) can turn a request
  // away while the threads race; alone, the two addresses get what is left.
  for (int i = 0; i < 600 && admitted.load() < 300; ++i) {
    std::string_view peer = i % 2 == 0 ? "192.0.2.1" : "192.0.2.2";
    if (f.limiter->check(request("GET", "/", peer, {{"X-API-Key", "shared"}})).allowed()) {
      admitted.fetch_add(1);
    }
  }
  EXPECT_EQ(admitted.load(), 300);
  for (std::string_view peer : {"192.0.2.1", "192.0.2.2"}) {
    EXPECT_FALSE(f.limiter->check(request("GET", "/", peer, {{"X-API-Key", "shared"}})).allowed());
  }
}

TEST(Limiter, LongestDelayOfTheQueuesGoesWithAnAdmission) {
  Fixture f(R"(http:
  policies:
    - name: queue
      key: ip
      algorithm: leaky_bucket
      capacity: 3
      rate_per_s: 10
)");
  EXPECT_EQ(f.limiter->check(request("GET", "/", "192.0.2.1")).binding.delay_ns, 0);
  EXPECT_EQ(f.limiter->check(request("GET", "/", "192.0.2.1")).binding.delay_ns, 100 * kMs);
}

}  // namespace
}  // namespace floodgate::http

namespace floodgate::http {
namespace {

TEST(Clocks, RealClocksNeverGoBackwardsAndManualOneMovesOnlyWhenTold) {
  SteadyClock steady;
  CoarseSteadyClock coarse;
  int64_t last_steady = steady.nowNs();
  int64_t last_coarse = coarse.nowNs();
  for (int i = 0; i < 1000; ++i) {
    int64_t s = steady.nowNs();
    int64_t c = coarse.nowNs();
    EXPECT_GE(s, last_steady);
    EXPECT_GE(c, last_coarse);
    last_steady = s;
    last_coarse = c;
  }
  ManualClock manual(5);
  EXPECT_EQ(manual.nowNs(), 5);
  manual.advanceMs(2);
  EXPECT_EQ(manual.nowNs(), 2'000'005);
  manual.setMs(1);
  EXPECT_EQ(manual.nowNs(), 1'000'000);
}

constexpr const char* kRedisStore = R"(http:
  store: {type: redis, address: 127.0.0.1:1}
  policies:
    - {name: per-ip, key: ip, algorithm: fixed_window, limit: 1, window_ms: 60000}
)";

// A service that links only floodgate::ratelimit gets a clear refusal for a Redis store,
// never a limiter that silently counts in memory.
TEST(StoreBackend, AStoreTypeWithNoBackendInThisProgramIsRefusedSayingWhatToLink) {
  auto config = parseHttpConfigText(kRedisStore, "test.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto made = Limiter::create(std::move(*config), std::make_shared<ManualClock>(0));
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("floodgate::redis"), std::string::npos);
  EXPECT_NE(made.error().message.find("useRedisStores()"), std::string::npos);
}

TEST(StoreBackend, ARegisteredBackendBuildsEveryPolicysStoreUntilRemoved) {
  int made_stores = 0;
  registerStoreBackend("redis", [&](const StoreConfig& store, std::shared_ptr<const Clock>) {
    StoreFactory memory = memoryStoreFactory(store);
    return [&made_stores, memory](const PolicyConfig& policy,
                                  std::shared_ptr<const Algorithm> algorithm) {
      ++made_stores;
      return memory(policy, std::move(algorithm));
    };
  });
  Fixture f(kRedisStore);
  ASSERT_NE(f.limiter, nullptr);
  EXPECT_EQ(made_stores, 1);
  EXPECT_TRUE(f.limiter->check(request("GET", "/", "192.0.2.1")).allowed());
  EXPECT_FALSE(f.limiter->check(request("GET", "/", "192.0.2.1")).allowed());

  registerStoreBackend("redis", {});
  auto config = parseHttpConfigText(kRedisStore, "test.yaml");
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(Limiter::create(std::move(*config), f.clock).ok());
}

}  // namespace
}  // namespace floodgate::http
