// SPDX-License-Identifier: MIT
// What one entry of the fleet's ban stream leads to, on a Redis clock the test steps by
// hand: a ban for what is left of it, and every reason to refuse one (forged, replayed,
// stale, too long, malformed, a wrong version, a prefix too wide, an address never banned).
#include "daemon/fleet_ban_gate.h"

#include <gtest/gtest.h>

namespace floodgate::daemon {
namespace {

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
constexpr int64_t kStartMs = 1'764'620'000'000;  // Redis's clock when the test begins
constexpr uint64_t kMaxBanNs = 3'600'000'000'000ULL;
constexpr int64_t kMaxBanMs = 3'600'000;

Cidr cidr(const char* text) {
  auto parsed = parseCidr(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return *parsed;
}

class FleetBanGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rules_.secret = kSecret;
    rules_.max_ban_ns = kMaxBanNs;
    rules_.widest_ipv4 = 24;
    rules_.widest_ipv6 = 48;
    rules_.allow = {cidr("192.0.2.0/24")};
    rules_.trusted_proxies = {cidr("10.0.0.0/8")};
    own_ = {cidr("203.0.113.5"), cidr("2001:db8:ffff::5")};
  }

  // A record of `address` ending `lasts_ms` after now, signed at now by host-a.
  http::StreamReport signedBan(const std::string& address, int64_t lasts_ms,
                               const std::string& secret = kSecret, int64_t signed_at = -1) {
    const int64_t at = signed_at < 0 ? now_ms_ : signed_at;
    const std::string line = "ban v1 " + address +
                             " expires_ms=" + std::to_string(now_ms_ + lasts_ms) +
                             " kind=manual nonce=" + std::to_string(++nonce_) + "abc";
    return http::signStreamReport(secret, line, "host-a:4242", at);
  }

  FleetBanVerdict check(const http::StreamReport& entry) {
    return gate_.check(entry, rules_, own_, now_ms_);
  }

  FleetBanRules rules_;
  std::vector<Cidr> own_;
  FleetBanGate gate_;
  int64_t now_ms_ = kStartMs;
  int nonce_ = 0;
};

TEST_F(FleetBanGateTest, ASignedBanIsAppliedForWhatIsLeftOfIt) {
  const http::StreamReport entry = signedBan("198.51.100.7", 600'000);
  now_ms_ += 100'000;  // read 100 s after it was made (a host starting later)
  FleetBanVerdict verdict = check(entry);
  ASSERT_EQ(verdict.result, metrics::kFleetBanApplied) << verdict.why;
  EXPECT_EQ(verdict.record.address.toString(), "198.51.100.7");
  EXPECT_EQ(verdict.record.expires_ms, kStartMs + 600'000) << "the same end on every host";
  EXPECT_EQ(verdict.ban_ns, 500'000'000'000ULL);
  EXPECT_EQ(verdict.publisher, "host-a:4242");
  EXPECT_TRUE(verdict.why.empty());
}

TEST_F(FleetBanGateTest, AForgedRecordIsRefused) {
  FleetBanVerdict verdict = check(signedBan("198.51.100.7", 60'000, "not the fleet's secret!!"));
  EXPECT_EQ(verdict.result, metrics::kFleetBanForged);
  EXPECT_NE(verdict.why.find("signature"), std::string::npos);
  // a record signed by the fleet, then changed (a longer ban, another address): forged too
  http::StreamReport changed = signedBan("198.51.100.7", 60'000);
  changed.line.replace(changed.line.find("198.51.100.7"), 12, "198.51.100.8");
  EXPECT_EQ(check(changed).result, metrics::kFleetBanForged);
  http::StreamReport resigned = signedBan("198.51.100.7", 60'000);
  resigned.time_ms += 1;  // the signed time moved
  EXPECT_EQ(check(resigned).result, metrics::kFleetBanForged);
}

TEST_F(FleetBanGateTest, ACopyAddedAgainIsRefusedAsReplayed) {
  const http::StreamReport entry = signedBan("198.51.100.7", 600'000);
  EXPECT_EQ(check(entry).result, metrics::kFleetBanApplied);
  now_ms_ += 30'000;
  FleetBanVerdict again = check(entry);
  EXPECT_EQ(again.result, metrics::kFleetBanReplayed);
  EXPECT_NE(again.why.find("read before"), std::string::npos);
  // the same ban with a fresh nonce is a new record (an operator banning it again)
  EXPECT_EQ(check(signedBan("198.51.100.7", 600'000)).result, metrics::kFleetBanApplied);
}

TEST_F(FleetBanGateTest, ACopyLongAfterIsStaleNotApplied) {
  const http::StreamReport entry = signedBan("198.51.100.7", 600'000);
  EXPECT_EQ(check(entry).result, metrics::kFleetBanApplied);
  // past max_ban and the skew: forgotten, and refused by its signed time instead
  now_ms_ += kMaxBanMs + 2 * http::kReportClockSkewMs + 1;
  EXPECT_EQ(check(signedBan("198.51.100.9", 60'000)).result, metrics::kFleetBanApplied);
  EXPECT_EQ(gate_.remembered(), 1u) << "what can no longer pass the time check is forgotten";
  EXPECT_EQ(check(entry).result, metrics::kFleetBanStale);
}

TEST_F(FleetBanGateTest, StaleAndAbsurdTimesAreRefused) {
  // signed longer ago than any ban may last
  FleetBanVerdict old =
      check(signedBan("198.51.100.7", 60'000, kSecret, now_ms_ - kMaxBanMs - 61'000));
  EXPECT_EQ(old.result, metrics::kFleetBanStale);
  EXPECT_NE(old.why.find("max_ban"), std::string::npos);
  // signed ahead of Redis's clock by more than the skew
  FleetBanVerdict ahead = check(signedBan("198.51.100.7", 60'000, kSecret, now_ms_ + 61'000));
  EXPECT_EQ(ahead.result, metrics::kFleetBanStale);
  EXPECT_NE(ahead.why.find("ahead"), std::string::npos);
  // within the skew: a host whose clock runs a little ahead is believed
  EXPECT_EQ(check(signedBan("198.51.100.7", 60'000, kSecret, now_ms_ + 59'000)).result,
            metrics::kFleetBanApplied);
  // an end beyond max_ban from now
  FleetBanVerdict absurd = check(signedBan("198.51.100.8", kMaxBanMs + 61'000));
  EXPECT_EQ(absurd.result, metrics::kFleetBanTooLong);
  EXPECT_NE(absurd.why.find("fleet.bans.max_ban"), std::string::npos);
  // an end in the past: over, counted, not worth a warning
  FleetBanVerdict over = check(signedBan("198.51.100.8", -1));
  EXPECT_EQ(over.result, metrics::kFleetBanExpired);
  EXPECT_TRUE(over.why.empty());
  EXPECT_EQ(check(signedBan("198.51.100.8", 0)).result, metrics::kFleetBanExpired);
}

TEST_F(FleetBanGateTest, ClockStepsBackAndForthKeepTheEnd) {
  const http::StreamReport entry = signedBan("198.51.100.7", 600'000);
  now_ms_ -= 20'000;  // Redis's clock stepped back (a failover to a server behind)
  FleetBanVerdict verdict = check(entry);
  ASSERT_EQ(verdict.result, metrics::kFleetBanApplied) << verdict.why;
  EXPECT_EQ(verdict.ban_ns, 620'000'000'000ULL) << "the end is absolute: what is left grows";
}

TEST_F(FleetBanGateTest, AddressesNeverBannedAreRefused) {
  const struct {
    const char* address;
    metrics::FleetBanResult result;
  } kCases[] = {
      {"127.0.0.1", metrics::kFleetBanLoopback},
      {"::1", metrics::kFleetBanLoopback},
      {"0.0.0.0", metrics::kFleetBanUnspecified},
      {"::", metrics::kFleetBanUnspecified},
      {"169.254.1.1", metrics::kFleetBanLinkLocal},
      {"224.0.0.1", metrics::kFleetBanMulticast},
      {"203.0.113.5", metrics::kFleetBanOwnAddress},
      {"203.0.113.0/24", metrics::kFleetBanOwnAddress},  // a prefix holding this host
      {"2001:db8:ffff::/48", metrics::kFleetBanOwnAddress},
      {"10.1.2.3", metrics::kFleetBanTrustedProxy},
      {"192.0.2.77", metrics::kFleetBanAllowListed},
  };
  for (const auto& c : kCases) {
    FleetBanVerdict verdict = check(signedBan(c.address, 60'000));
    EXPECT_EQ(verdict.result, c.result) << c.address;
    EXPECT_EQ(verdict.ban_ns, 0u) << c.address;
  }
  // the allow list is the operator's own choice: counted, no warning
  EXPECT_TRUE(check(signedBan("192.0.2.78", 60'000)).why.empty());
  EXPECT_NE(check(signedBan("127.0.0.2", 60'000)).why.find("never banned"), std::string::npos);
}

TEST_F(FleetBanGateTest, BadPrefixesAreRefused) {
  EXPECT_EQ(check(signedBan("198.51.0.0/16", 60'000)).result, metrics::kFleetBanTooWide);
  EXPECT_EQ(check(signedBan("0.0.0.0/0", 60'000)).result, metrics::kFleetBanTooWide);
  EXPECT_EQ(check(signedBan("2001:db8::/32", 60'000)).result, metrics::kFleetBanTooWide);
  EXPECT_EQ(check(signedBan("198.51.100.0/24", 60'000)).result, metrics::kFleetBanApplied);
  EXPECT_EQ(check(signedBan("2001:db8:1::/48", 60'000)).result, metrics::kFleetBanApplied);
  // host bits set below the prefix: not a ban record at all
  EXPECT_EQ(check(signedBan("198.51.100.7/24", 60'000)).result, metrics::kFleetBanMalformed);
}

TEST_F(FleetBanGateTest, MalformedAndOtherVersionsAreRefused) {
  auto signedLine = [&](const std::string& line) {
    return http::signStreamReport(kSecret, line, "host-a:1", now_ms_);
  };
  FleetBanVerdict version =
      check(signedLine("ban v2 198.51.100.7 expires_ms=1 kind=manual nonce=ab more=1"));
  EXPECT_EQ(version.result, metrics::kFleetBanMalformed);
  EXPECT_NE(version.why.find("v1 only"), std::string::npos);
  EXPECT_EQ(check(signedLine("offender 198.51.100.7 rejections=5 within_ms=1")).result,
            metrics::kFleetBanMalformed);
  const Result<http::StreamReport> unreadable = Error::usage("no fields");
  EXPECT_EQ(gate_.check(unreadable, rules_, own_, now_ms_).result, metrics::kFleetBanMalformed);
}

}  // namespace
}  // namespace floodgate::daemon
