// SPDX-License-Identifier: MIT
// What one entry of the fleet's ban stream leads to, on a Redis clock the test steps by
// hand: a ban for what is left of it, and every reason to refuse one (forged, replayed,
// stale, too long, malformed, a wrong version, a prefix too wide, an address never banned);
// a lift of exactly its prefix, refused for the same reasons where they apply; and a start
// reading the past back newest first, where the newer of a ban and a lift decides.
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

  // A lift record of `address`, signed at `signed_at` (now by default) by host-b.
  http::StreamReport signedLift(const std::string& address, const std::string& secret = kSecret,
                                int64_t signed_at = -1) {
    const int64_t at = signed_at < 0 ? now_ms_ : signed_at;
    const std::string line = "unban v1 " + address + " nonce=" + std::to_string(++nonce_) + "def";
    return http::signStreamReport(secret, line, "host-b:77", at);
  }

  FleetBanVerdict check(const http::StreamReport& entry) {
    return gate_.check(entry, rules_, own_, now_ms_);
  }
  // As an entry of a start's read-back (newest first).
  FleetBanVerdict readBack(const http::StreamReport& entry) {
    return gate_.check(entry, rules_, own_, now_ms_, true);
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

TEST_F(FleetBanGateTest, ACopyOfALiftIsRefusedPastTheRecordsRemembered) {
  // a lift, then more signed records than a gate remembers, then a new ban of its prefix
  const http::StreamReport lift = signedLift("198.51.100.7");
  ASSERT_EQ(check(lift).result, metrics::kFleetBanLifted);
  auto nth = [](size_t i) {
    return "100." + std::to_string(64 + i / 65536) + "." + std::to_string(i / 256 % 256) + "." +
           std::to_string(i % 256);
  };
  for (size_t i = 0; i < FleetBanGate::kMaxRemembered; ++i) {
    if (i % 1000 == 0) now_ms_ += 1;  // 200 ms of records, well within max_ban
    ASSERT_EQ(check(signedBan(nth(i), 600'000)).result, metrics::kFleetBanApplied) << nth(i);
  }
  EXPECT_EQ(gate_.remembered(), FleetBanGate::kMaxRemembered);
  EXPECT_EQ(check(signedBan("198.51.100.7", 600'000)).result, metrics::kFleetBanApplied);
  // the lift is no longer remembered, but its copy must not undo the new ban
  FleetBanVerdict copy = check(lift);
  EXPECT_EQ(copy.result, metrics::kFleetBanReplayed);
  EXPECT_NE(copy.why.find("copy"), std::string::npos) << copy.why;
  // a record signed after the one forgotten is still new
  now_ms_ += 1;
  EXPECT_EQ(check(signedLift("198.51.100.7")).result, metrics::kFleetBanLifted);
  EXPECT_EQ(gate_.remembered(), FleetBanGate::kMaxRemembered) << "no growth";
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

TEST_F(FleetBanGateTest, ASignedLiftLiftsExactlyItsPrefix) {
  for (const char* address : {"198.51.100.7", "198.51.100.0/24", "2001:db8:1::/48"}) {
    FleetBanVerdict verdict = check(signedLift(address));
    ASSERT_EQ(verdict.result, metrics::kFleetBanLifted) << address << ": " << verdict.why;
    EXPECT_TRUE(verdict.lift);
    EXPECT_EQ(verdict.record.address.toString(), address) << "never a prefix around or inside";
    EXPECT_EQ(verdict.publisher, "host-b:77");
    EXPECT_TRUE(verdict.why.empty());
    EXPECT_EQ(verdict.lift_age_ns, 0u) << "read as it comes: whatever ban is there";
  }
  // a ban record is never a lift
  EXPECT_FALSE(check(signedBan("198.51.100.7", 60'000)).lift);
}

TEST_F(FleetBanGateTest, ALiftIsRefusedForTheReasonsABanIs) {
  FleetBanVerdict forged = check(signedLift("198.51.100.7", "not the fleet's secret!!"));
  EXPECT_EQ(forged.result, metrics::kFleetBanForged);
  http::StreamReport widened = signedLift("198.51.100.7");
  widened.line.replace(widened.line.find("198.51.100.7"), 12, "198.51.100.0/24");
  EXPECT_EQ(check(widened).result, metrics::kFleetBanForged) << "a lift changed after signing";
  // a copy added again, even after a ban of its prefix that it would undo
  const http::StreamReport lift = signedLift("198.51.100.7");
  EXPECT_EQ(check(lift).result, metrics::kFleetBanLifted);
  EXPECT_EQ(check(signedBan("198.51.100.7", 60'000)).result, metrics::kFleetBanApplied);
  EXPECT_EQ(check(lift).result, metrics::kFleetBanReplayed);
  // signed in the future (beyond the skew), or longer ago than any ban it could lift
  FleetBanVerdict ahead = check(signedLift("198.51.100.8", kSecret, now_ms_ + 61'000));
  EXPECT_EQ(ahead.result, metrics::kFleetBanStale);
  EXPECT_NE(ahead.why.find("ahead"), std::string::npos);
  EXPECT_EQ(check(signedLift("198.51.100.8", kSecret, now_ms_ - kMaxBanMs - 61'000)).result,
            metrics::kFleetBanStale);
  // wider than any fleet ban: one record must not clear a host's whole table
  FleetBanVerdict wide = check(signedLift("198.51.0.0/16"));
  EXPECT_EQ(wide.result, metrics::kFleetBanTooWide);
  EXPECT_NE(wide.why.find("/24"), std::string::npos) << wide.why;
  EXPECT_EQ(check(signedLift("0.0.0.0/0")).result, metrics::kFleetBanTooWide);
  EXPECT_EQ(check(signedLift("::/0")).result, metrics::kFleetBanTooWide);
  auto signedLine = [&](const std::string& line) {
    return http::signStreamReport(kSecret, line, "host-b:77", now_ms_);
  };
  FleetBanVerdict version = check(signedLine("unban v2 198.51.100.7 nonce=ab scope=all"));
  EXPECT_EQ(version.result, metrics::kFleetBanMalformed);
  EXPECT_NE(version.why.find("v1 only"), std::string::npos);
  EXPECT_EQ(check(signedLine("unban v1 198.51.100.7")).result, metrics::kFleetBanMalformed);
  EXPECT_EQ(check(signedLine("unban v1 198.51.100.7/24 nonce=ab")).result,
            metrics::kFleetBanMalformed);
}

TEST_F(FleetBanGateTest, LiveRecordsApplyInTheOrderRead) {
  // ban, lift, ban again: each newer than the last, as a running host reads them
  EXPECT_EQ(check(signedBan("198.51.100.7", 600'000)).result, metrics::kFleetBanApplied);
  EXPECT_EQ(check(signedLift("198.51.100.7")).result, metrics::kFleetBanLifted);
  EXPECT_EQ(check(signedBan("198.51.100.7", 600'000)).result, metrics::kFleetBanApplied);
  EXPECT_EQ(gate_.readBackPrefixes(), 0u) << "nothing kept for records read in order";
}

TEST_F(FleetBanGateTest, AReadBackSkipsABanOlderThanALiftOfItsPrefix) {
  // the stream: ban .7, ban .8, lift .7 — read back newest first
  const http::StreamReport ban7 = signedBan("198.51.100.7", 600'000);
  const http::StreamReport ban8 = signedBan("198.51.100.8", 600'000);
  const http::StreamReport lift7 = signedLift("198.51.100.7");
  now_ms_ += 5'000;
  FleetBanVerdict lifted = readBack(lift7);
  EXPECT_EQ(lifted.result, metrics::kFleetBanLifted) << "a host restarted may hold it";
  EXPECT_EQ(lifted.lift_age_ns, 5'000'000'000ULL) << "not a ban this host started since";
  EXPECT_EQ(readBack(ban8).result, metrics::kFleetBanApplied);
  FleetBanVerdict ban = readBack(ban7);
  EXPECT_EQ(ban.result, metrics::kFleetBanSuperseded);
  EXPECT_TRUE(ban.why.empty()) << "counted, not worth a warning";
  EXPECT_EQ(ban.ban_ns, 0u);
  // a lift of another prefix (wider or narrower) decides nothing for this one
  EXPECT_EQ(readBack(signedLift("198.51.100.0/24")).result, metrics::kFleetBanLifted);
  EXPECT_EQ(readBack(signedBan("198.51.100.9", 600'000)).result, metrics::kFleetBanApplied);
}

TEST_F(FleetBanGateTest, AReadBackAppliesABanNewerThanALiftAndLiftsNothingOlder) {
  // the stream: ban, lift, ban again, all of .7 — read back newest first
  const http::StreamReport first = signedBan("198.51.100.7", 900'000);  // the longer one
  const http::StreamReport lift = signedLift("198.51.100.7");
  const http::StreamReport again = signedBan("198.51.100.7", 300'000);
  FleetBanVerdict newest = readBack(again);
  ASSERT_EQ(newest.result, metrics::kFleetBanApplied);
  EXPECT_EQ(newest.ban_ns, 300'000'000'000ULL);
  EXPECT_EQ(readBack(lift).result, metrics::kFleetBanSuperseded)
      << "lifting would undo the ban made after it";
  EXPECT_EQ(readBack(first).result, metrics::kFleetBanSuperseded)
      << "lifted before the ban again: its longer end must not stretch the new one";
}

TEST_F(FleetBanGateTest, AnOlderLiftReadBackLiftsNothingNewerDecided) {
  // the stream: lift, lift again, of .7 — the older one is a repeat of what was decided
  const http::StreamReport older = signedLift("198.51.100.7");
  EXPECT_EQ(readBack(signedLift("198.51.100.7")).result, metrics::kFleetBanLifted);
  EXPECT_EQ(readBack(older).result, metrics::kFleetBanSuperseded);
  // an expired ban newer than a lift stands for nothing: the lift still applies
  const http::StreamReport lift8 = signedLift("198.51.100.8");
  EXPECT_EQ(readBack(signedBan("198.51.100.8", -1)).result, metrics::kFleetBanExpired);
  EXPECT_EQ(readBack(lift8).result, metrics::kFleetBanLifted);
}

TEST_F(FleetBanGateTest, TheFirstLiveRecordEndsTheReadBack) {
  EXPECT_EQ(readBack(signedLift("198.51.100.7")).result, metrics::kFleetBanLifted);
  EXPECT_EQ(gate_.readBackPrefixes(), 1u);
  // after the read-back, a ban is newer than every lift read: it bans again
  EXPECT_EQ(check(signedBan("198.51.100.7", 60'000)).result, metrics::kFleetBanApplied);
  EXPECT_EQ(gate_.readBackPrefixes(), 0u);
  // and a new read-back (the stream followed again) starts from nothing
  EXPECT_EQ(readBack(signedLift("198.51.100.8")).result, metrics::kFleetBanLifted);
  gate_.forgetReadBack();
  EXPECT_EQ(readBack(signedBan("198.51.100.8", 60'000)).result, metrics::kFleetBanApplied);
}

TEST_F(FleetBanGateTest, AReadBackFloodOfLiftsIsCapped) {
  // a stream written past its trim with lifts of distinct prefixes, all signed
  auto nth = [](size_t i) {
    return "100." + std::to_string(64 + i / 65536) + "." + std::to_string(i / 256 % 256) + "." +
           std::to_string(i % 256);
  };
  for (size_t i = 0; i < FleetBanGate::kMaxReadBackPrefixes; ++i) {
    ASSERT_EQ(readBack(signedLift(nth(i))).result, metrics::kFleetBanLifted) << nth(i);
  }
  EXPECT_EQ(gate_.readBackPrefixes(), FleetBanGate::kMaxReadBackPrefixes);
  // past the cap: a lift of a prefix not kept track of lifts nothing (a newer ban of it may
  // have gone unremembered), said once in the log; a ban applies as if no lift followed it
  const std::string beyond = nth(FleetBanGate::kMaxReadBackPrefixes);
  FleetBanVerdict lift = readBack(signedLift(beyond));
  EXPECT_EQ(lift.result, metrics::kFleetBanFailed);
  EXPECT_NE(lift.why.find("lift it again"), std::string::npos) << lift.why;
  EXPECT_EQ(readBack(signedBan(beyond, 60'000)).result, metrics::kFleetBanApplied);
  EXPECT_EQ(gate_.readBackPrefixes(), FleetBanGate::kMaxReadBackPrefixes) << "no growth";
  // prefixes kept track of still decide
  EXPECT_EQ(readBack(signedBan(nth(7), 60'000)).result, metrics::kFleetBanSuperseded);
}

}  // namespace
}  // namespace floodgate::daemon
