// SPDX-License-Identifier: MIT
// What one offender report leads to, decided on a clock the test steps by hand: a ban for
// what is left of the ban time, a repeat while it runs, and every reason not to ban.
#include "daemon/escalation_policy.h"

#include <gtest/gtest.h>

#include <sstream>

#include "common/cidr_literal.h"
#include "floodgate/fleet/report_stream.h"

namespace floodgate::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

constexpr uint64_t kBanNs = 60'000'000'000ULL;

using test::cidr;

ReceivedReport received(const char* line, uint64_t age_ns = 0) {
  ReceivedReport r;
  r.report = parseReport(line);
  r.sender = "test";
  r.reporter = "host-a";
  r.age_ns = age_ns;
  return r;
}

class EscalationPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.escalate.enabled = true;
    config_.escalate.rejections = 50;
    config_.escalate.within_ms = 10000;
    config_.escalate.ban_ns = kBanNs;
    config_.escalate.max_bans_per_minute = 2;
    config_.rules.allow = {cidr("192.0.2.0/24")};
    config_.rules.trusted_proxies = {cidr("10.0.0.0/8")};
    config_.rules.rejections = 50;
    config_.rules.within_ms = 10000;
    config_.rules.ipv6_prefix = 64;
  }

  EscalationDecision decide(const ReceivedReport& report) {
    return decideEscalation(report, config_, own_, memory_, now_);
  }
  // What the daemon does with a ban: remembers it and counts it against the reporter.
  void remember(const ReceivedReport& report, const EscalationDecision& decision) {
    chargeBan(report, config_, memory_, now_);
    memory_.banned_until[report.report->address.toString()] =
        now_ + std::chrono::nanoseconds(decision.ban_ns);
  }

  EscalationConfig config_;
  std::vector<Cidr> own_ = {cidr("203.0.113.1")};
  EscalationMemory memory_;
  Clock::time_point now_ = Clock::time_point{} + seconds(1000);
};

// The bans that are over are forgotten, looked through at most once a second however often
// the loop asks; one over and not yet forgotten is no repeat.
TEST_F(EscalationPolicyTest, EndedBansAreForgottenAtMostOnceASecond) {
  auto report = received("offender 198.51.100.7 rejections=50 within_ms=10000");
  remember(report, decide(report));
  memory_.forgetEnded(now_);
  EXPECT_EQ(memory_.banned_until.size(), 1u) << "running";
  now_ += seconds(60);  // over
  memory_.forgetEnded(now_);
  EXPECT_TRUE(memory_.banned_until.empty());
  remember(report, decide(report));
  now_ += seconds(60);
  memory_.forgetEnded(now_ - std::chrono::milliseconds(1));  // a look a moment before
  memory_.forgetEnded(now_);
  EXPECT_EQ(memory_.banned_until.size(), 1u) << "looked through less than a second ago";
  EXPECT_EQ(decide(report).result, metrics::kEscalationBanned) << "over: no repeat";
  memory_.forgetEnded(now_ + seconds(1));
  EXPECT_TRUE(memory_.banned_until.empty());
}

TEST_F(EscalationPolicyTest, BansForTheBanTimeThenRepeatsUntilItEnds) {
  auto report = received("offender 198.51.100.7 rejections=50 within_ms=10000");
  auto first = decide(report);
  EXPECT_EQ(first.result, metrics::kEscalationBanned);
  EXPECT_EQ(first.ban_ns, kBanNs);
  EXPECT_TRUE(first.why.empty());
  remember(report, first);
  now_ += seconds(59);
  EXPECT_EQ(decide(report).result, metrics::kEscalationRepeat);
  now_ += seconds(1);  // the ban is over: a new report bans again
  EXPECT_EQ(decide(report).result, metrics::kEscalationBanned);
}

// A ban lifted before its end (a fleet lift) is no longer a reason to take the address's
// next report for a repeat: the next offence bans it again.
TEST_F(EscalationPolicyTest, ALiftedBanIsForgottenAndTheNextReportBansAgain) {
  const ReceivedReport report = received("offender 198.51.100.7 rejections=80 within_ms=5000");
  const EscalationDecision first = decide(report);
  ASSERT_EQ(first.result, metrics::kEscalationBanned);
  remember(report, first);
  EXPECT_EQ(decide(report).result, metrics::kEscalationRepeat);
  memory_.forgetBan(cidr("198.51.100.7/32"));
  EXPECT_EQ(decide(report).result, metrics::kEscalationBanned);
  // another address's lift leaves this one's ban remembered
  remember(report, first);
  memory_.forgetBan(cidr("198.51.100.8/32"));
  EXPECT_EQ(decide(report).result, metrics::kEscalationRepeat);
}

TEST_F(EscalationPolicyTest, AReportFromTheStreamsPastBansForWhatIsLeftOrIsExpired) {
  auto old = decide(
      received("offender 198.51.100.7 rejections=50 within_ms=10000", kBanNs - 1'000'000'000ULL));
  EXPECT_EQ(old.result, metrics::kEscalationBanned);
  EXPECT_EQ(old.ban_ns, 1'000'000'000ULL);
  auto expired = decide(received("offender 198.51.100.7 rejections=50 within_ms=10000", kBanNs));
  EXPECT_EQ(expired.result, metrics::kEscalationExpired);
  EXPECT_TRUE(expired.why.empty()) << "counted, not logged";
}

// A stream reporter names itself, so one secret holder signing under new names would get a
// fresh quota for each: the stream as a whole has its own, and a socket report is apart.
TEST_F(EscalationPolicyTest, MadeUpStreamReporterNamesShareTheStreamsQuota) {
  config_.escalate.max_stream_bans_per_minute = 5;
  int banned = 0, limited = 0;
  for (int i = 0; i < 20; ++i) {
    auto report =
        received(("offender 198.51.100." + std::to_string(i + 1) + " rejections=50 within_ms=10000")
                     .c_str());
    report.reporter = "svc-" + std::to_string(i);
    auto decision = decide(report);
    if (decision.result == metrics::kEscalationBanned) {
      ++banned;
      remember(report, decision);
    } else {
      EXPECT_EQ(decision.result, metrics::kEscalationRateLimited);
      EXPECT_NE(decision.why.find("max_stream_bans_per_minute"), std::string::npos);
      ++limited;
    }
  }
  EXPECT_EQ(banned, 5);
  EXPECT_EQ(limited, 15);
  auto local = received("offender 198.51.100.99 rejections=50 within_ms=10000");
  local.over_socket = true;
  local.uid = 0;
  EXPECT_EQ(decide(local).result, metrics::kEscalationBanned) << "the socket is not the stream";
  now_ += seconds(60);
  auto next = received("offender 198.51.100.50 rejections=50 within_ms=10000");
  next.reporter = "svc-99";
  EXPECT_EQ(decide(next).result, metrics::kEscalationBanned) << "a new minute";
}

TEST_F(EscalationPolicyTest, TheQuotaPerReporterStartsAgainEachMinute) {
  for (const char* address : {"198.51.100.1", "198.51.100.2"}) {
    auto report =
        received(("offender " + std::string(address) + " rejections=50 within_ms=10000").c_str());
    auto decision = decide(report);
    ASSERT_EQ(decision.result, metrics::kEscalationBanned) << address;
    remember(report, decision);
  }
  auto third = received("offender 198.51.100.3 rejections=50 within_ms=10000");
  auto limited = decide(third);
  EXPECT_EQ(limited.result, metrics::kEscalationRateLimited);
  EXPECT_NE(limited.why.find("max_bans_per_minute"), std::string::npos);
  auto other = third;
  other.reporter = "host-b";
  EXPECT_EQ(decide(other).result, metrics::kEscalationBanned) << "each reporter has its own";
  now_ += seconds(60);
  EXPECT_EQ(decide(third).result, metrics::kEscalationBanned);
}

// The fleet lifted a prefix (an operator's `ban del --config`): a report of it from the stream
// signed before the lift, as a restarted controller reads back, does not ban it again; one
// signed after it, a new offence, does, as does a report over the socket, made now.
TEST_F(EscalationPolicyTest, AReportSignedBeforeTheFleetsLastLiftOfItsPrefixDoesNotBan) {
  constexpr int64_t kLiftMs = 1'764'620'000'000;
  memory_.noteLift(cidr("198.51.100.7"), kLiftMs, kLiftMs, kBanNs);
  // an older lift read later
  memory_.noteLift(cidr("198.51.100.7"), kLiftMs - 5000, kLiftMs + 1000, kBanNs);
  ReceivedReport before = received("offender 198.51.100.7 rejections=50 within_ms=10000");
  before.signed_ms = kLiftMs - 1;
  const EscalationDecision lifted = decide(before);
  EXPECT_EQ(lifted.result, metrics::kEscalationLifted);
  EXPECT_TRUE(lifted.why.empty()) << "counted, not logged: every restart meets them";
  ReceivedReport after = before;
  after.signed_ms = kLiftMs;
  EXPECT_EQ(decide(after).result, metrics::kEscalationBanned);
  ReceivedReport socket = before;
  socket.over_socket = true;
  socket.uid = 0;
  EXPECT_EQ(decide(socket).result, metrics::kEscalationBanned);
  ReceivedReport other = received("offender 198.51.100.8 rejections=50 within_ms=10000");
  other.signed_ms = kLiftMs - 1;
  EXPECT_EQ(decide(other).result, metrics::kEscalationBanned) << "exactly the prefix lifted";
}

// A lift is held while a report signed before it could still ban: for the ban time and twice
// the clock skew (the report stream's Redis and the fleet's each within the skew of the
// hosts') after it was signed, on the clock of the fleet's Redis that read the lifts since.
TEST_F(EscalationPolicyTest, ALiftIsForgottenOnceNoReportSignedBeforeItCouldBan) {
  constexpr int64_t kLiftMs = 1'764'620'000'000;
  constexpr int64_t kKeepMs = kBanNs / 1'000'000 + 2 * http::kReportClockSkewMs;
  memory_.noteLift(cidr("198.51.100.7"), kLiftMs, kLiftMs, kBanNs);
  memory_.noteLift(cidr("198.51.100.8"), kLiftMs + 1, kLiftMs + 1, kBanNs);
  memory_.noteLift(cidr("198.51.100.9"), kLiftMs + kKeepMs, kLiftMs + kKeepMs, kBanNs);
  EXPECT_EQ(memory_.lifts.size(), 3u) << "read as old as it may be: held";
  memory_.noteLift(cidr("198.51.100.10"), kLiftMs + kKeepMs, kLiftMs + kKeepMs + 1, kBanNs);
  EXPECT_FALSE(memory_.lifts.signedAt("198.51.100.7").has_value());
  EXPECT_EQ(memory_.lifts.signedAt("198.51.100.8"), kLiftMs + 1);
  EXPECT_EQ(memory_.lifts.size(), 3u);
  // what it refused: a report signed before it, read from then on, is over anyway
  ReceivedReport before = received("offender 198.51.100.7 rejections=50 within_ms=10000",
                                   static_cast<uint64_t>(kKeepMs + 2) * 1'000'000);
  before.signed_ms = kLiftMs - 1;
  EXPECT_EQ(decide(before).result, metrics::kEscalationExpired);
  // a lift read back already that old is not held at all
  memory_.noteLift(cidr("198.51.100.11"), kLiftMs, kLiftMs + kKeepMs + 1, kBanNs);
  EXPECT_FALSE(memory_.lifts.signedAt("198.51.100.11").has_value());
  EXPECT_EQ(memory_.lifts.size(), 3u);
}

// Whoever holds the fleet's secret can sign lifts of distinct prefixes without end, all
// young: the memory stays at its bound (LiftMemory finds the one to go by its order of
// signing, not by a pass over every lift). The lift signed first goes, so a report of its
// prefix signed before it bans again.
TEST_F(EscalationPolicyTest, WhenFullOfYoungLiftsTheOneSignedFirstGoes) {
  constexpr int64_t kLiftMs = 1'764'620'000'000;
  auto nth = [](size_t i) {
    return "100." + std::to_string(64 + i / 65536) + "." + std::to_string(i / 256 % 256) + "." +
           std::to_string(i % 256);
  };
  // two lifts a millisecond, 100 s of them: younger than the ban time and the skews
  for (size_t i = 0; i < 2 * LiftMemory::kMaxLifts; ++i) {
    const int64_t at = kLiftMs + static_cast<int64_t>(i / 2);
    memory_.noteLift(cidr(nth(i).c_str()), at, at, kBanNs);
  }
  EXPECT_EQ(memory_.lifts.size(), LiftMemory::kMaxLifts);
  EXPECT_FALSE(memory_.lifts.signedAt(nth(0)).has_value());
  EXPECT_FALSE(memory_.lifts.signedAt(nth(LiftMemory::kMaxLifts - 1)).has_value());
  EXPECT_TRUE(memory_.lifts.signedAt(nth(LiftMemory::kMaxLifts)).has_value());
  EXPECT_TRUE(memory_.lifts.signedAt(nth(2 * LiftMemory::kMaxLifts - 1)).has_value());
  ReceivedReport before =
      received(("offender " + nth(0) + " rejections=50 within_ms=10000").c_str());
  before.signed_ms = kLiftMs - 1;
  EXPECT_EQ(decide(before).result, metrics::kEscalationBanned);
}

// A report of 198.51.N.1 (each in a network of its own), read back by a start's replay 10 s
// after it was made or live.
ReceivedReport fromTheStream(int n, bool replayed) {
  const std::string line =
      "offender 198.51." + std::to_string(n) + ".1 rejections=50 within_ms=10000";
  ReceivedReport r = received(line.c_str(), replayed ? 10'000'000'000ULL : 0);
  r.replayed = replayed;
  return r;
}

// A start reads back one ban time of the report stream, which the controllers running then
// charged to their quotas as the reports came: the replay is charged to quotas of its own, so
// it applies what the fleet applied and leaves the live quotas whole.
TEST_F(EscalationPolicyTest, AStartsReplayIsNotChargedToTheLiveQuotas) {
  config_.escalate.max_bans_per_minute = 60;
  for (int n = 1; n <= 61; ++n) {
    const ReceivedReport replayed = fromTheStream(n, true);
    const EscalationDecision decision = decide(replayed);
    ASSERT_EQ(decision.result, metrics::kEscalationBanned) << n << ": " << decision.why;
    EXPECT_EQ(decision.ban_ns, kBanNs - 10'000'000'000ULL);
    remember(replayed, decision);
  }
  for (int n = 101; n <= 160; ++n) {
    const ReceivedReport live = fromTheStream(n, false);
    const EscalationDecision decision = decide(live);
    ASSERT_EQ(decision.result, metrics::kEscalationBanned) << n << ": " << decision.why;
    remember(live, decision);
  }
  EXPECT_EQ(decide(fromTheStream(161, false)).result, metrics::kEscalationRateLimited)
      << "the live quota is whole, and no more";
}

// The replay's quotas are bounded all the same: as many bans as the live ones let the fleet
// apply over one ban time and a minute, whatever a holder of the secret added to the stream.
TEST_F(EscalationPolicyTest, AStartsReplayBansNoMoreThanTheQuotasLetTheFleetInOneBanTime) {
  EXPECT_EQ(replayPerMinute(2, kBanNs), 4);
  EXPECT_EQ(replayPerMinute(60, 600'000'000'000ULL), 660);
  EXPECT_EQ(replayPerMinute(60, 600'000'000'001ULL), 720);
  for (int n = 1; n <= 4; ++n) {
    const ReceivedReport replayed = fromTheStream(n, true);
    const EscalationDecision decision = decide(replayed);
    ASSERT_EQ(decision.result, metrics::kEscalationBanned) << n << ": " << decision.why;
    remember(replayed, decision);
  }
  const EscalationDecision fifth = decide(fromTheStream(5, true));
  EXPECT_EQ(fifth.result, metrics::kEscalationRateLimited);
  EXPECT_NE(fifth.why.find("replay"), std::string::npos) << fifth.why;
  EXPECT_EQ(decide(fromTheStream(5, false)).result, metrics::kEscalationBanned)
      << "the live quota is untouched";
}

TEST_F(EscalationPolicyTest, EveryGuardIsAResultAndOnlyTheAllowListIsQuiet) {
  const struct {
    const char* line;
    metrics::EscalationResult result;
  } cases[] = {
      {"offender 127.0.0.1 rejections=50 within_ms=10000", metrics::kEscalationLoopback},
      {"offender 0.0.0.0 rejections=50 within_ms=10000", metrics::kEscalationUnspecified},
      {"offender 169.254.1.1 rejections=50 within_ms=10000", metrics::kEscalationLinkLocal},
      {"offender 224.0.0.1 rejections=50 within_ms=10000", metrics::kEscalationMulticast},
      {"offender 203.0.113.1 rejections=50 within_ms=10000", metrics::kEscalationOwnAddress},
      {"offender 10.1.2.3 rejections=50 within_ms=10000", metrics::kEscalationTrustedProxy},
      {"offender 198.51.100.0/24 rejections=50 within_ms=10000", metrics::kEscalationTooWide},
      {"offender 198.51.100.7 rejections=49 within_ms=10000", metrics::kEscalationBelowThreshold},
      {"offender 198.51.100.7 rejections=50 within_ms=10001", metrics::kEscalationBelowThreshold},
      {"offender nobody rejections=50 within_ms=10000", metrics::kEscalationInvalid},
  };
  for (const auto& c : cases) {
    auto decision = decide(received(c.line));
    EXPECT_EQ(decision.result, c.result) << c.line;
    EXPECT_FALSE(decision.why.empty()) << c.line << ": a refusal says why";
  }
  auto allowed = decide(received("offender 192.0.2.9 rejections=50 within_ms=10000"));
  EXPECT_EQ(allowed.result, metrics::kEscalationAllowListed);
  EXPECT_TRUE(allowed.why.empty()) << "the operator's own choice: counted, not logged";
}

TEST_F(EscalationPolicyTest, UnsignedAndUnknownSendersAreUnauthorised) {
  auto unsigned_entry = received("offender 198.51.100.7 rejections=50 within_ms=10000");
  unsigned_entry.report = Error::usage("its signature does not match");
  unsigned_entry.unauthorised = true;
  EXPECT_EQ(decide(unsigned_entry).result, metrics::kEscalationUnauthorised);

  auto socket = received("offender 198.51.100.7 rejections=50 within_ms=10000");
  socket.over_socket = true;
  socket.uid = 0;
  socket.gid = 0;
  EXPECT_EQ(decide(socket).result, metrics::kEscalationBanned) << "root may report";
  socket.uid = 4242;
  socket.gid = 4242;
  auto stranger = decide(socket);
  EXPECT_EQ(stranger.result, metrics::kEscalationUnauthorised);
  EXPECT_NE(stranger.why.find("uid 4242"), std::string::npos);
  config_.access.users = {4242};
  EXPECT_EQ(decide(socket).result, metrics::kEscalationBanned) << "a listed reporter may";
}

// Whoever holds an IPv6 /48 has 65,536 /64 clients to drive over the threshold: the bans of
// one network's clients are bounded over every reporter and the stream, so it cannot spend a
// reporter's quota before another abuser's report bans.
TEST_F(EscalationPolicyTest, OneNetworksClientsCannotSpendTheQuotaOfEveryone) {
  config_.escalate.max_bans_per_minute = 8;
  config_.escalate.max_bans_per_network_per_minute = 3;
  auto report = [](const std::string& address) {
    return received(("offender " + address + " rejections=50 within_ms=10000").c_str());
  };
  int banned = 0;
  for (int n = 0; n < 40; ++n) {
    std::ostringstream slash64;
    slash64 << "2001:db8:77:" << std::hex << n << "::/64";
    const ReceivedReport r = report(slash64.str());
    const EscalationDecision decision = decide(r);
    if (decision.result == metrics::kEscalationBanned) {
      ++banned;
      remember(r, decision);
    } else {
      EXPECT_EQ(decision.result, metrics::kEscalationRateLimited);
      EXPECT_NE(decision.why.find("2001:db8:77::/48"), std::string::npos) << decision.why;
      EXPECT_NE(decision.why.find("max_bans_per_network_per_minute"), std::string::npos);
    }
  }
  EXPECT_EQ(banned, 3);
  for (const char* other : {"2001:db8:78::/64", "198.51.100.7", "198.51.101.7", "198.51.102.7",
                            "64:ff9b::198.51.103.7"}) {
    const ReceivedReport r = report(other);
    const EscalationDecision decision = decide(r);
    EXPECT_EQ(decision.result, metrics::kEscalationBanned) << other << ": " << decision.why;
    remember(r, decision);
  }
  EXPECT_NE(decide(report("203.0.113.9")).why.find("max_bans_per_minute"), std::string::npos)
      << "the reporter's quota, spent by five networks";
  now_ += seconds(60);
  EXPECT_EQ(decide(report("2001:db8:77:ff::/64")).result, metrics::kEscalationBanned)
      << "a new minute";
}

// A network's bans count over every reporter and the stream; an IPv4 /24 is one network, and
// NAT64's clients are networks of their IPv4 addresses, not the one /48 of 64:ff9b::.
TEST_F(EscalationPolicyTest, ANetworksShareCountsOverEveryReporterAndTheStream) {
  config_.escalate.max_bans_per_network_per_minute = 1;
  auto report = [](const std::string& address, const char* reporter, bool socket) {
    ReceivedReport r = received(("offender " + address + " rejections=50 within_ms=10000").c_str());
    r.reporter = reporter;
    r.over_socket = socket;
    r.uid = 0;
    return r;
  };
  const ReceivedReport first = report("198.51.100.1", "host-a", false);
  remember(first, decide(first));
  for (const ReceivedReport& r :
       {report("198.51.100.2", "host-b", false), report("198.51.100.3", "svc", true)}) {
    const EscalationDecision decision = decide(r);
    EXPECT_EQ(decision.result, metrics::kEscalationRateLimited) << r.reporter;
    EXPECT_NE(decision.why.find("198.51.100.0/24"), std::string::npos) << decision.why;
  }
  const ReceivedReport nat64 = report("64:ff9b::198.51.104.1", "host-a", false);
  remember(nat64, decide(nat64));
  EXPECT_EQ(decide(report("64:ff9b::198.51.105.1", "host-b", false)).result,
            metrics::kEscalationBanned);
  EXPECT_EQ(decide(report("64:ff9b::198.51.104.2", "host-b", false)).result,
            metrics::kEscalationRateLimited);
}

TEST_F(EscalationPolicyTest, TimeGoingBackwardsNeverEndsABanEarly) {
  auto report = received("offender 198.51.100.7 rejections=50 within_ms=10000");
  remember(report, decide(report));
  now_ -= seconds(30);
  EXPECT_EQ(decide(report).result, metrics::kEscalationRepeat);
}

}  // namespace
}  // namespace floodgate::daemon
