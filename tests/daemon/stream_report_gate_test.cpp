// SPDX-License-Identifier: MIT
// What one entry of the offender report stream becomes, on a Redis clock the test steps by
// hand: a copy is refused, also once forgotten to make room, and a holder of the secret
// flooding the stream cannot make the gate refuse the reports signed after the flood began.
#include "daemon/stream_report_gate.h"

#include <gtest/gtest.h>

#include "common/cidr_literal.h"
#include "daemon/escalation_policy.h"

namespace floodgate::daemon {
namespace {

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
constexpr int64_t kStartMs = 1'764'620'000'000;  // Redis's clock when the test begins
constexpr uint64_t kBanNs = 600'000'000'000ULL;
constexpr size_t kFlood = StreamReportGate::kMaxRemembered + 1;

using test::cidr;

class StreamReportGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.escalate.enabled = true;
    config_.escalate.ban_ns = kBanNs;
    config_.escalate.max_bans_per_minute = 60;
    config_.rules.rejections = 5;
    config_.rules.within_ms = 10000;
  }

  // A report of `address` signed by web-1 at `signed_at`; `rejections` tells reports apart.
  static http::StreamReport signedReport(const std::string& address, int64_t signed_at,
                                         size_t rejections = 5) {
    return http::signStreamReport(
        kSecret,
        "offender " + address + " rejections=" + std::to_string(rejections) + " within_ms=1000",
        "web-1:812", signed_at);
  }

  ReceivedReport read(const http::StreamReport& report) {
    return gate_.check(std::to_string(++entries_) + "-0", report, now_ms_);
  }

  // What the daemon's policy makes of it.
  metrics::EscalationResult decide(const ReceivedReport& received) {
    return decideEscalation(received, config_, own_, memory_, std::chrono::steady_clock::now())
        .result;
  }

  EscalationConfig config_;
  std::vector<Cidr> own_ = {cidr("203.0.113.1")};
  EscalationMemory memory_;
  StreamReportGate gate_{kSecret, kBanNs};
  int64_t now_ms_ = kStartMs;
  uint64_t entries_ = 0;
};

TEST_F(StreamReportGateTest, AReportPassesOnceAndItsCopyIsUnauthorised) {
  const http::StreamReport report = signedReport("198.51.100.7", now_ms_);
  EXPECT_EQ(decide(read(report)), metrics::kEscalationBanned);
  EXPECT_EQ(gate_.remembered(), 1u);
  const ReceivedReport copy = read(report);
  EXPECT_TRUE(copy.unauthorised);
  EXPECT_NE(copy.report.error().message.find("read before"), std::string::npos);
}

// A service reports an address the operator allow-listed: the guard refuses it. The operator
// then takes the address off the allow list, and whoever can write the stream adds the same
// entry again: the copy is refused as read before, not a ban the fleet's services never
// meant (the guard follows the config, so the report is remembered though it banned nothing).
TEST_F(StreamReportGateTest, ACopyOfAReportTheGuardRefusedDoesNotBanAfterTheConfigChanges) {
  config_.rules.allow = {cidr("198.51.100.0/24")};
  const http::StreamReport report = signedReport("198.51.100.7", now_ms_);
  EXPECT_EQ(decide(read(report)), metrics::kEscalationAllowListed);
  config_.rules.allow.clear();
  now_ms_ += 5000;
  const ReceivedReport copy = read(report);
  EXPECT_TRUE(copy.unauthorised) << "a copy of an allow-listed address's report banned it";
  EXPECT_NE(decide(copy), metrics::kEscalationBanned);
  const ReceivedReport fresh = read(signedReport("198.51.100.7", now_ms_));
  EXPECT_EQ(decide(fresh), metrics::kEscalationBanned);
}

// Signed reports of an address the guard never bans (loopback), dated as far ahead of Redis's
// clock as it lets through, at a high rate: they take room as any report does, but a report
// counts from no later than a moment after it was read, so a genuine report signed since
// still bans.
TEST_F(StreamReportGateTest, AFloodOfReportsTheGuardRefusesIsBounded) {
  for (size_t i = 0; i < kFlood; ++i) {
    const ReceivedReport flood = read(signedReport("127.0.0.1", now_ms_ + 59'000, 5 + i));
    ASSERT_TRUE(flood.report.ok()) << flood.report.error().message;
  }
  EXPECT_EQ(gate_.remembered(), StreamReportGate::kMaxRemembered);
  now_ms_ += 2000;
  const ReceivedReport genuine = read(signedReport("198.51.100.7", now_ms_));
  EXPECT_FALSE(genuine.unauthorised) << genuine.report.error().message;
  EXPECT_EQ(decide(genuine), metrics::kEscalationBanned);
}

// The same flood of reports the guard lets through (the quotas refuse them later): the memory
// fills and forgets to make room, but a report counts from no later than a moment after it
// was read, so what is forgotten says nothing of reports signed since. A report signed when
// clocks agree is still refused as maybe a copy once forgotten.
TEST_F(StreamReportGateTest, AFloodSignedAheadForgetsNothingSignedSinceItBegan) {
  const http::StreamReport first = signedReport("198.51.100.200", now_ms_ - 500);
  ASSERT_FALSE(read(first).unauthorised);
  for (size_t i = 0; i < kFlood; ++i) {
    const ReceivedReport flood =
        read(signedReport("198.51.100." + std::to_string(1 + i % 100), now_ms_ + 59'000, 5 + i));
    ASSERT_FALSE(flood.unauthorised) << i << ": " << flood.report.error().message;
  }
  EXPECT_EQ(gate_.remembered(), StreamReportGate::kMaxRemembered);
  now_ms_ += 2000;
  const ReceivedReport genuine = read(signedReport("192.0.2.7", now_ms_));
  EXPECT_FALSE(genuine.unauthorised) << genuine.report.error().message;
  EXPECT_EQ(decide(genuine), metrics::kEscalationBanned);
  const ReceivedReport copy = read(first);
  EXPECT_TRUE(copy.unauthorised) << "forgotten to make room, yet a copy does not pass";
  EXPECT_NE(copy.report.error().message.find("forgotten"), std::string::npos);
}

}  // namespace
}  // namespace floodgate::daemon
