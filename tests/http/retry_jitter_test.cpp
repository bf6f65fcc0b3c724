// SPDX-License-Identifier: MIT
// Retry-After jitter: whole seconds, never earlier than a retry can succeed, spread evenly.
#include "floodgate/core/retry_jitter.h"

#include <gtest/gtest.h>

#include <map>

#include "floodgate/core/config_parser.h"
#include "floodgate/core/headers.h"
#include "floodgate/core/limiter.h"

namespace floodgate::http {
namespace {

constexpr int64_t kS = 1'000'000'000;

// A wait read from a shared store may be near the largest int64: rounded and spread, it is
// still a long wait (capped at about 31 years), never one wrapped around to a short one.
TEST(RetryJitter, AWaitNearTheLargestIntegerStaysLong) {
  const int64_t cap = 1'000'000'000 * kS;
  for (uint64_t random : {0, 1, 99'999'999, 100'000'000}) {
    const int64_t ns = jitteredRetryAfterNs(INT64_MAX - 1, 0.1, random);
    EXPECT_GE(ns, cap) << random;
    EXPECT_LE(ns, cap + cap / 10) << random;
  }
  EXPECT_EQ(jitteredRetryAfterNs(INT64_MAX, 1, 0), cap);
  EXPECT_EQ(retryAfterSeconds(INT64_MAX), INT64_MAX / kS + 1);
}

TEST(RetryJitter, WholeSecondsFromTheWaitToATenthMoreRoundedUp) {
  // 9.2 s rounds up to 10; a tenth of that is 1: 10 or 11, by the random number's residue.
  EXPECT_EQ(jitteredRetryAfterNs(9'200'000'000, 0.1, 0), 10 * kS);
  EXPECT_EQ(jitteredRetryAfterNs(9'200'000'000, 0.1, 1), 11 * kS);
  EXPECT_EQ(jitteredRetryAfterNs(9'200'000'000, 0.1, 2), 10 * kS);
  // Even a short wait gets a second of spread; none is ever earlier than the wait.
  EXPECT_EQ(jitteredRetryAfterNs(1, 0.1, 0), 1 * kS);
  EXPECT_EQ(jitteredRetryAfterNs(1, 0.1, 1), 2 * kS);
  EXPECT_EQ(jitteredRetryAfterNs(60 * kS, 0.5, 30), 90 * kS);
  EXPECT_EQ(jitteredRetryAfterNs(60 * kS, 0.5, 31), 60 * kS);
  // No jitter: the wait, rounded up to whole seconds and at least one.
  EXPECT_EQ(jitteredRetryAfterNs(9'200'000'000, 0, 12345), 10 * kS);
  EXPECT_EQ(jitteredRetryAfterNs(0, 0, 7), 1 * kS);
}

TEST(RetryJitter, AThousandRejectionsOfOneKeyComeBackSpreadOverTheSeconds) {
  auto config = parseHttpConfigText(R"(http:
  retry_after_jitter: 0.5
  policies:
    - {name: per-ip, key: ip, algorithm: fixed_window, limit: 1, window_ms: 10000}
)",
                                    "test.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto clock = std::make_shared<ManualClock>(1'000 * kS);  // at the start of a window
  auto limiter = Limiter::create(std::move(*config), clock);
  ASSERT_TRUE(limiter.ok());
  RequestInfo request;
  request.method = "GET";
  request.path = "/";
  request.peer = "192.0.2.1";
  ASSERT_TRUE((*limiter)->check(request).allowed());
  std::map<int64_t, int> seen;  // Retry-After → rejections told it
  for (int i = 0; i < 1000; ++i) {
    Verdict v = (*limiter)->check(request);
    ASSERT_EQ(v.binding.outcome, Outcome::kRejected);
    // header and body say the same, in whole seconds
    std::string header;
    for (const auto& [name, value] : responseHeaders(v)) {
      if (name == "Retry-After") header = value;
    }
    EXPECT_NE(problemJson(v).find("\"retry-after\":" + header), std::string::npos);
    ++seen[std::stoll(header)];
  }
  // The window resets in 10 s: every client is told 10 to 15, each second about a sixth.
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen.begin()->first, 10);
  EXPECT_EQ(seen.rbegin()->first, 15);
  for (const auto& [seconds, count] : seen) {
    EXPECT_GT(count, 100) << seconds << " s";  // 167 expected; 6 standard deviations off
    EXPECT_LT(count, 240) << seconds << " s";
  }
}

TEST(RetryJitter, ZeroTurnsItOffAndTheFractionIsChecked) {
  auto off = parseHttpConfigText("http:\n  retry_after_jitter: 0\n", "f.yaml");
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(off->retry_after_jitter, 0);
  EXPECT_EQ(parseHttpConfigText("http:\n  policies: []\n", "f.yaml")->retry_after_jitter, 0.1);
  auto bad = parseHttpConfigText("http:\n  retry_after_jitter: 2\n", "f.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "f.yaml:2:23: http.retry_after_jitter must be from 0 to 1, got 2");
}

}  // namespace
}  // namespace floodgate::http
