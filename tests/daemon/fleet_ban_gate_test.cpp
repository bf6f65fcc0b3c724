// SPDX-License-Identifier: MIT
// What one entry of the fleet's ban stream leads to, on a Redis clock the test steps by
// hand: a ban for what is left of it, and every reason to refuse one (forged, replayed,
// stale, too long, malformed, a wrong version, a prefix too wide, an address never banned);
// a lift of exactly its prefix, refused for the same reasons where they apply, and read late,
// of bans older than it only; and what a start's replay of the past keeps of each prefix.
#include "daemon/fleet_ban_gate.h"

#include <gtest/gtest.h>

#include "common/cidr_literal.h"

namespace floodgate::daemon {
namespace {

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
constexpr int64_t kStartMs = 1'764'620'000'000;  // Redis's clock when the test begins
constexpr uint64_t kMaxBanNs = 3'600'000'000'000ULL;
constexpr int64_t kMaxBanMs = 3'600'000;

using test::cidr;

// The i-th of as many addresses as a gate remembers records, in 100.64.0.0/10.
std::string nth(size_t i) {
  return "100." + std::to_string(64 + i / 65536) + "." + std::to_string(i / 256 % 256) + "." +
         std::to_string(i % 256);
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
    rules_.services = {cidr("172.16.0.9")};
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

// A raised max_ban lets older records through the time check, among them ones read and
// forgotten under the old one: a lift read again would free a prefix banned since. They are
// refused as copies; those still remembered are kept as long as their copies now pass.
TEST_F(FleetBanGateTest, ARaisedMaxBanLetsNoForgottenRecordBackIn) {
  const http::StreamReport lift = signedLift("198.51.100.7");
  ASSERT_EQ(check(lift).result, metrics::kFleetBanLifted);
  now_ms_ += kMaxBanMs + 5 * 60'000;  // the lift is forgotten: past max_ban and the skew
  const http::StreamReport ban = signedBan("198.51.100.7", 600'000);
  ASSERT_EQ(check(ban).result, metrics::kFleetBanApplied);
  ASSERT_EQ(check(lift).result, metrics::kFleetBanStale);

  rules_.max_ban_ns = 24 * kMaxBanNs;  // a reload raises it to a day
  FleetBanVerdict copy = check(lift);
  EXPECT_EQ(copy.result, metrics::kFleetBanReplayed) << copy.why;
  EXPECT_NE(copy.why.find("shorter fleet.bans.max_ban"), std::string::npos) << copy.why;
  // the ban read before the raise is still remembered when its old memory would have ended
  now_ms_ += kMaxBanMs + 5 * 60'000;
  EXPECT_EQ(check(ban).result, metrics::kFleetBanReplayed);
  // and what is signed now is new
  EXPECT_EQ(check(signedLift("198.51.100.7")).result, metrics::kFleetBanLifted);

  // the raise undone: a record signed now is new, not refused for a day as maybe forgotten
  rules_.max_ban_ns = kMaxBanNs;
  now_ms_ += 60'000;
  EXPECT_EQ(check(signedBan("198.51.100.8", 600'000)).result, metrics::kFleetBanApplied);
  EXPECT_EQ(check(lift).result, metrics::kFleetBanStale);
}

// Records that can never pass (over before they were read, malformed) take no room: a holder
// of the secret adding them without end pushes nothing out of the memory.
TEST_F(FleetBanGateTest, RecordsThatCanNeverPassTakeNoRoom) {
  const int64_t ahead = now_ms_ + 59'000;
  for (size_t i = 0; i <= FleetBanGate::kMaxRemembered; ++i) {
    const http::StreamReport entry =
        i % 2 == 0 ? signedBan(nth(i), -1, kSecret, ahead)  // over
                   : http::signStreamReport(kSecret,
                                            "ban v2 198.51.100.7 nonce=" + std::to_string(i) + "ab",
                                            "host-a:1", ahead);
    const FleetBanVerdict verdict = check(entry);
    ASSERT_TRUE(verdict.result == metrics::kFleetBanExpired ||
                verdict.result == metrics::kFleetBanMalformed)
        << i << ": " << metrics::kFleetBanResultNames[verdict.result];
  }
  EXPECT_EQ(gate_.remembered(), 0u);
  EXPECT_EQ(check(signedBan("198.51.100.7", 600'000)).result, metrics::kFleetBanApplied);
  EXPECT_EQ(check(signedLift("198.51.100.8")).result, metrics::kFleetBanLifted);
  const http::StreamReport too_long = signedBan("198.51.100.9", kMaxBanMs + 70'000);
  EXPECT_EQ(check(too_long).result, metrics::kFleetBanTooLong);
  EXPECT_EQ(gate_.remembered(), 3u);
  now_ms_ += 20'000;  // now it ends within max_ban and the skew
  EXPECT_EQ(check(too_long).result, metrics::kFleetBanReplayed);
}

// A ban refused for its address passes once the config says otherwise (the allow list
// edited, a reload): a copy of it added to the stream after the change must not ban what the
// fleet lifted since, so it is remembered as the ones applied are.
TEST_F(FleetBanGateTest, ACopyOfABanRefusedForItsAddressIsRefusedAfterTheConfigChanges) {
  const http::StreamReport allowed = signedBan("192.0.2.7", 600'000);
  ASSERT_EQ(check(allowed).result, metrics::kFleetBanAllowListed);
  const http::StreamReport wide = signedLift("198.51.0.0/16");
  ASSERT_EQ(check(wide).result, metrics::kFleetBanTooWide);
  rules_.allow.clear();
  rules_.widest_ipv4 = 16;
  EXPECT_EQ(check(allowed).result, metrics::kFleetBanReplayed);
  EXPECT_EQ(check(wide).result, metrics::kFleetBanReplayed);
  EXPECT_EQ(check(signedBan("192.0.2.7", 600'000)).result, metrics::kFleetBanApplied)
      << "a ban signed anew applies";
}

// The same flood of records that apply: the memory fills and forgets to make room, but a
// record counts from no later than a moment after it was read, so what is forgotten says
// nothing of the records signed since; else every controller would refuse the genuine bans
// and lifts signed within the next minute as copies. A record signed when clocks agree is
// still refused as maybe a copy once forgotten.
TEST_F(FleetBanGateTest, AFloodSignedAheadForgetsNothingSignedSinceItBegan) {
  const http::StreamReport first = signedBan("198.51.100.200", 600'000, kSecret, now_ms_ - 500);
  ASSERT_EQ(check(first).result, metrics::kFleetBanApplied);
  for (size_t i = 0; i <= FleetBanGate::kMaxRemembered; ++i) {
    const FleetBanVerdict flood = check(signedBan(nth(i), 600'000, kSecret, now_ms_ + 59'000));
    ASSERT_EQ(flood.result, metrics::kFleetBanApplied) << i << ": " << flood.why;
  }
  EXPECT_EQ(gate_.remembered(), FleetBanGate::kMaxRemembered);
  now_ms_ += 2000;
  const FleetBanVerdict genuine = check(signedBan("198.51.100.7", 600'000));
  EXPECT_EQ(genuine.result, metrics::kFleetBanApplied) << genuine.why;
  const FleetBanVerdict lift = check(signedLift("198.51.100.7"));
  EXPECT_EQ(lift.result, metrics::kFleetBanLifted) << lift.why;
  const FleetBanVerdict copy = check(first);
  EXPECT_EQ(copy.result, metrics::kFleetBanReplayed) << "forgotten to make room, yet refused";
  EXPECT_NE(copy.why.find("forgotten"), std::string::npos) << copy.why;
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
      // the fleet's Redis: every host banning it would go deaf to the stream
      {"172.16.0.9", metrics::kFleetBanService},
      {"172.16.0.0/24", metrics::kFleetBanService},
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
}

TEST_F(FleetBanGateTest, ALiftReadLateLiftsOnlyBansStartedBeforeItWasSigned) {
  // read as it comes: whatever ban of it there is started before it
  FleetBanVerdict verdict = check(signedLift("198.51.100.7"));
  ASSERT_EQ(verdict.result, metrics::kFleetBanLifted);
  EXPECT_EQ(verdict.lift_age_ns, 0u);
  // read 20 minutes late (Redis was out of reach, or a start replays it): a ban this host
  // started on its own within those 20 minutes is newer than the lift
  const http::StreamReport late = signedLift("198.51.100.8");
  now_ms_ += 20 * 60'000;
  verdict = check(late);
  ASSERT_EQ(verdict.result, metrics::kFleetBanLifted);
  EXPECT_EQ(verdict.lift_age_ns, 20 * 60'000'000'000ULL);
}

// The replay's verdicts: what the gate let through, as read oldest first.
class FleetBanReplayTest : public FleetBanGateTest {
 protected:
  // Through the gate, then kept by the replay; how many it superseded.
  size_t replayed(const http::StreamReport& entry) {
    FleetBanVerdict verdict = check(entry);
    EXPECT_TRUE(verdict.result == metrics::kFleetBanApplied ||
                verdict.result == metrics::kFleetBanLifted)
        << verdict.why;
    EXPECT_FALSE(replay_.full(verdict));
    return replay_.add(std::move(verdict), now_ms_);
  }

  // "ADDRESS" for a ban, "-ADDRESS" for a lift: what the replay hands over, in order.
  std::vector<std::string> taken() {
    std::vector<std::string> out;
    for (const FleetBanVerdict& v : replay_.take(now_ms_)) {
      out.push_back((v.lift ? "-" : "") + v.record.address.toString());
    }
    return out;
  }

  FleetBanReplay replay_;
};

TEST_F(FleetBanReplayTest, ABanLiftedWithinTheReplayIsNotApplied) {
  // the stream: ban .7, ban .8, lift .7
  EXPECT_EQ(replayed(signedBan("198.51.100.7", 600'000)), 0u);
  EXPECT_EQ(replayed(signedBan("198.51.100.8", 600'000)), 0u);
  EXPECT_EQ(replayed(signedLift("198.51.100.7")), 1u) << "the ban of .7";
  // a lift of another prefix (wider or narrower) decides nothing for this one
  EXPECT_EQ(replayed(signedLift("198.51.100.0/24")), 0u);
  EXPECT_EQ(taken(),
            (std::vector<std::string>{"198.51.100.8", "-198.51.100.7", "-198.51.100.0/24"}));
  EXPECT_EQ(replay_.prefixes(), 0u) << "taken: empty";
}

TEST_F(FleetBanReplayTest, ABanMadeAgainAfterALiftFollowsTheLift) {
  // the stream: ban (the longer one), lift, ban again, all of .7
  EXPECT_EQ(replayed(signedBan("198.51.100.7", 900'000)), 0u);
  EXPECT_EQ(replayed(signedLift("198.51.100.7")), 1u);
  EXPECT_EQ(replayed(signedBan("198.51.100.7", 300'000)), 0u);
  now_ms_ += 10'000;  // the replay took 10 s to read
  std::vector<FleetBanVerdict> out = replay_.take(now_ms_);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].lift) << "a host restarted may hold the first ban: lifted first";
  EXPECT_EQ(out[0].lift_age_ns, 10'000'000'000ULL) << "signed 10 s before it is applied";
  EXPECT_FALSE(out[1].lift);
  EXPECT_EQ(out[1].ban_ns, 290'000'000'000ULL) << "what is left of the ban again, not more";
}

TEST_F(FleetBanReplayTest, OfBansAndLiftsAfterEachOtherTheLastDecide) {
  // two bans: the longer end stands, as a ban is only ever extended
  EXPECT_EQ(replayed(signedBan("198.51.100.7", 900'000)), 0u);
  EXPECT_EQ(replayed(signedBan("198.51.100.7", 300'000)), 1u);
  // two lifts: the later one lifts what the first did
  EXPECT_EQ(replayed(signedLift("198.51.100.8")), 0u);
  EXPECT_EQ(replayed(signedLift("198.51.100.8")), 1u);
  std::vector<FleetBanVerdict> out = replay_.take(now_ms_);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ban_ns, 900'000'000'000ULL);
  EXPECT_TRUE(out[1].lift);
  // a ban over by the time the replay is read hands ban_ns 0 (counted expired)
  EXPECT_EQ(replayed(signedBan("198.51.100.9", 5'000)), 0u);
  now_ms_ += 6'000;
  out = replay_.take(now_ms_);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ban_ns, 0u);
}

// Anyone who can write to the stream can add a copy of an old record after newer ones; once
// its original has left the replay's window, the gate cannot tell it is a copy. Records
// signed further apart than the clock skew are then taken in the order they were signed.
TEST_F(FleetBanReplayTest, ACopyOfAnOldLiftReadLastLiftsNoBanSignedAfterIt) {
  const int64_t lift_signed = now_ms_;
  const http::StreamReport old_lift = signedLift("198.51.100.7");
  now_ms_ += 10 * http::kReportClockSkewMs;
  // the stream a starting host reads: a newer ban, then the old lift added again
  EXPECT_EQ(replayed(signedBan("198.51.100.7", 900'000)), 0u);
  EXPECT_EQ(replayed(old_lift), 0u) << "the ban was signed after it";
  std::vector<FleetBanVerdict> out = replay_.take(now_ms_);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].lift) << "it still lifts what predates it, the host's own bans";
  EXPECT_EQ(out[0].lift_age_ns, static_cast<uint64_t>(now_ms_ - lift_signed) * 1'000'000);
  EXPECT_FALSE(out[1].lift) << "and the ban is applied after it";
  EXPECT_EQ(out[1].ban_ns, 900'000'000'000ULL);
}

TEST_F(FleetBanReplayTest, ACopyOfABanReadAfterItsLiftIsNotApplied) {
  const http::StreamReport old_ban = signedBan("198.51.100.7", 30 * http::kReportClockSkewMs);
  now_ms_ += 10 * http::kReportClockSkewMs;
  EXPECT_EQ(replayed(signedLift("198.51.100.7")), 0u);
  EXPECT_EQ(replayed(old_ban), 1u) << "signed before the lift: lifted";
  EXPECT_EQ(taken(), (std::vector<std::string>{"-198.51.100.7"}));
  // nor does an older lift read last replace a newer one
  const http::StreamReport older_lift = signedLift("198.51.100.8");
  now_ms_ += 10 * http::kReportClockSkewMs;
  EXPECT_EQ(replayed(signedLift("198.51.100.8")), 0u);
  EXPECT_EQ(replayed(older_lift), 1u);
  std::vector<FleetBanVerdict> out = replay_.take(now_ms_);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].lift_age_ns, 0u) << "the newer lift, signed just now";
}

// Within the clock skew the signers' clocks cannot order two records: the stream's order does.
TEST_F(FleetBanReplayTest, RecordsSignedWithinTheSkewFollowTheStreamsOrder) {
  const http::StreamReport lift = signedLift("198.51.100.7");
  now_ms_ += http::kReportClockSkewMs / 2;
  EXPECT_EQ(replayed(signedBan("198.51.100.7", 600'000)), 0u);
  EXPECT_EQ(replayed(lift), 1u) << "read after the ban: lifts it";
  EXPECT_EQ(taken(), (std::vector<std::string>{"-198.51.100.7"}));
}

TEST_F(FleetBanReplayTest, AFullReplaySaysSo) {
  for (size_t i = 0; i < FleetBanReplay::kMaxPrefixes; ++i) {
    ASSERT_EQ(replayed(signedLift(nth(i))), 0u) << nth(i);
  }
  EXPECT_EQ(replay_.prefixes(), FleetBanReplay::kMaxPrefixes);
  // a prefix it holds still fits; a new one does not: the caller takes what it holds first
  FleetBanVerdict held = check(signedBan(nth(7), 60'000));
  EXPECT_FALSE(replay_.full(held));
  FleetBanVerdict beyond = check(signedBan(nth(FleetBanReplay::kMaxPrefixes), 60'000));
  EXPECT_TRUE(replay_.full(beyond));
  EXPECT_EQ(replay_.take(now_ms_).size(), FleetBanReplay::kMaxPrefixes);
  EXPECT_FALSE(replay_.full(beyond));
}

}  // namespace
}  // namespace floodgate::daemon
