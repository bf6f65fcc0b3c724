// SPDX-License-Identifier: MIT
// The RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10), Retry-After and the body.
#include "floodgate/core/headers.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "floodgate/core/config_parser.h"

namespace floodgate::http {
namespace {

constexpr int64_t kMs = 1'000'000;

class Headers : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = parseHttpConfigText(R"(http:
  retry_after_jitter: 0  # the exact wait (jitter: retry_jitter_test.cpp)
  policies:
    - name: per-key
      key: header:X-API-Key
      algorithm: fixed_window
      limit: 100
      window_ms: 60000
    - name: burst
      key: ip
      algorithm: token_bucket
      capacity: 10
      rate_per_s: 0.5
)",
                                      "t.yaml");
    ASSERT_TRUE(config.ok()) << config.error().message;
    auto made = Limiter::create(std::move(*config), clock_);
    ASSERT_TRUE(made.ok());
    limiter_ = std::move(*made);
  }

  Verdict check(std::string_view api_key, std::string_view peer = "192.0.2.1") {
    RequestInfo r;
    r.method = "GET";
    r.path = "/";
    r.peer = peer;
    if (!api_key.empty()) r.headers.emplace_back("X-API-Key", api_key);
    return limiter_->check(r);
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(48'000 * kMs);
  std::unique_ptr<Limiter> limiter_;
};

TEST_F(Headers, PolicyAndRemainingForEveryMatchingPolicy) {
  Verdict v = check("k");
  EXPECT_EQ(rateLimitPolicyHeader(v), R"("per-key";q=100;w=60, "burst";q=10;w=20)");
  // Window ends at 60 s, 12 s from now; the bucket refills 1 token in 2 s.
  EXPECT_EQ(rateLimitHeader(v), R"("per-key";r=99;t=12, "burst";r=9;t=2)");
  auto headers = responseHeaders(v);
  ASSERT_EQ(headers.size(), 2u);
  EXPECT_EQ(headers[0].first, "RateLimit-Policy");
  EXPECT_EQ(headers[1].first, "RateLimit");
}

TEST_F(Headers, OnlyMatchingPoliciesAppear) {
  Verdict v = check("");
  EXPECT_EQ(rateLimitPolicyHeader(v), R"("burst";q=10;w=20)");
}

TEST_F(Headers, RejectionHasRetryAfterRoundedUpAndAProblemBody) {
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(check("", "192.0.2.9").allowed());
  clock_->advanceMs(300);  // 0.15 tokens back; 1.7 s to go: Retry-After 2
  Verdict v = check("k", "192.0.2.9");
  ASSERT_FALSE(v.allowed());
  EXPECT_EQ(statusFor(v), 429);
  EXPECT_EQ(v.binding.retry_after_ns, 1700 * kMs);
  auto headers = responseHeaders(v);
  ASSERT_EQ(headers.size(), 3u);
  EXPECT_EQ(headers[2], (std::pair<std::string, std::string>{"Retry-After", "2"}));
  EXPECT_EQ(headers[1].second, R"("per-key";r=100;t=12, "burst";r=0;t=20)");

  auto body = nlohmann::json::parse(problemJson(v));
  EXPECT_EQ(body["status"], 429);
  EXPECT_EQ(body["title"], "Too Many Requests");
  EXPECT_EQ(body["violated-policies"], nlohmann::json::array({"burst"}));
  EXPECT_EQ(body["retry-after"], 2);
}

TEST_F(Headers, TheProblemBodyIsTheDocumentedObject) {
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(check("", "192.0.2.9").allowed());
  clock_->advanceMs(300);
  Verdict v = check("k", "192.0.2.9");
  ASSERT_FALSE(v.allowed());
  EXPECT_EQ(problemJson(v), R"({"type":"about:blank","title":"Too Many Requests","status":429,)"
                            R"("detail":"rate limit of policy 'burst' exceeded; retry after 2 s",)"
                            R"("retry-after":2,"violated-policies":["burst"]})");
}

TEST(RetryAfter, RoundsUpToWholeSecondsAndIsNeverZero) {
  EXPECT_EQ(retryAfterSeconds(1), 1);
  EXPECT_EQ(retryAfterSeconds(1'000'000'000), 1);
  EXPECT_EQ(retryAfterSeconds(1'000'000'001), 2);
  EXPECT_EQ(retryAfterSeconds(0), 1);
}

TEST(ProblemJson, CostAboveBurstSaysRetryingWillNotHelpAndHasNoRetryAfter) {
  PolicyConfig policy;
  policy.name = "tiny";
  auto algorithm = makeAlgorithm({AlgorithmKind::kGcra, 0, 0, 2, 1.0});
  ASSERT_TRUE(algorithm.ok());
  Verdict v;
  v.binding.outcome = Outcome::kCostExceedsBurst;
  v.binding.policy = "tiny";
  v.binding.limit = 2;
  v.decisions.push_back({&policy, algorithm->get(), "k", 3, v.binding, false});
  v.violated.push_back("tiny");
  EXPECT_EQ(statusFor(v), 429);
  auto headers = responseHeaders(v);
  for (const auto& [name, value] : headers) EXPECT_NE(name, "Retry-After");
  auto body = nlohmann::json::parse(problemJson(v));
  EXPECT_NE(body["detail"].get<std::string>().find("retrying will not help"), std::string::npos);
  EXPECT_FALSE(body.contains("retry-after"));
}

TEST(RateLimitFields, QuotesAndBackslashesInANameAreEscaped) {
  PolicyConfig policy;
  policy.name = R"(a"b\c)";
  auto algorithm = makeAlgorithm({AlgorithmKind::kGcra, 0, 0, 2, 1.0});
  ASSERT_TRUE(algorithm.ok());
  Verdict v;
  v.decisions.push_back({&policy, algorithm->get(), "k", 1, v.binding, false});
  EXPECT_EQ(rateLimitPolicyHeader(v), R"("a\"b\\c";q=2;w=2)");
}

// Names reach the body as JSON strings whatever they hold (a config only allows letters,
// digits, '_', '-' and '.', but the body must stay valid JSON regardless).
TEST(ProblemJson, EscapesQuotesBackslashesAndControlCharacters) {
  const std::string name = "a\"b\\c\n\x01";
  Verdict v;
  v.binding.outcome = Outcome::kStoreUnavailable;
  v.binding.policy = name;
  v.violated.push_back(name);
  auto body = nlohmann::json::parse(problemJson(v));
  EXPECT_EQ(body["status"], 503);
  EXPECT_EQ(body["title"], "Service Unavailable");
  EXPECT_EQ(body["violated-policies"], nlohmann::json::array({name}));
  EXPECT_NE(body["detail"].get<std::string>().find(name), std::string::npos);
}

TEST(ProblemJson, AnAmbiguousKeyIsABadRequestWithNoRetryAndNoQuotaFields) {
  PolicyConfig policy;
  policy.name = "per-key";
  auto algorithm = makeAlgorithm({AlgorithmKind::kGcra, 0, 0, 2, 1.0});
  ASSERT_TRUE(algorithm.ok());
  Verdict v;
  v.binding.outcome = Outcome::kAmbiguousKey;
  v.binding.policy = "per-key";
  v.binding.limit = 2;
  v.decisions.push_back({&policy, algorithm->get(), "k", 1, v.binding, false});
  v.violated.push_back("per-key");
  EXPECT_EQ(statusFor(v), 400);
  EXPECT_TRUE(responseHeaders(v).empty());
  auto body = nlohmann::json::parse(problemJson(v));
  EXPECT_EQ(body["title"], "Bad Request");
  EXPECT_EQ(body["status"], 400);
  EXPECT_EQ(body["detail"],
            "the key header of policy 'per-key' names more than one key: it is sent more than "
            "once with different values, or its credentials are not in canonical base64; send "
            "it once, canonically encoded");
  EXPECT_FALSE(body.contains("retry-after"));
}

}  // namespace
}  // namespace floodgate::http
