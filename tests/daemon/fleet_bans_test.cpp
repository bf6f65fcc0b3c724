// SPDX-License-Identifier: MIT
// Bans shared by the fleet through a private redis-server: what one host's FleetBans
// publishes, another's applies with the same end; a host started later reads back the bans
// still in force, but not one lifted after it; a lift reaches every host and a ban after it
// bans again; forged, copied and garbled entries written straight into the stream are
// refused and counted; a Redis that goes away loses no ban read later.
#include "daemon/fleet_bans.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <set>
#include <sstream>
#include <thread>

#include "common/cidr_literal.h"
#include "floodgate/fleet/report_stream.h"
#include "redis/redis_server.h"

namespace floodgate::daemon {
namespace {

using http::testing::RedisServer;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
constexpr const char* kStream = "fg:bans";
constexpr uint64_t kMinuteNs = 60'000'000'000ULL;

using test::cidr;

class FleetBansTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (http::testing::haveRedis()) server_ = RedisServer::start();
    if (server_ == nullptr) GTEST_SKIP() << "redis-server is not installed or did not start";
    config_.enabled = true;
    config_.redis.type = "redis";
    config_.redis.address = server_->address().text();
    config_.stream = kStream;
    config_.secret = kSecret;
    config_.share_rule = true;
    config_.max_ban_ns = 60 * kMinuteNs;
  }

  std::unique_ptr<FleetBans> host(const config::FleetBansConfig& config) {
    auto bans = std::make_unique<FleetBans>();
    bans->sync(config, {cidr("192.0.2.0/24")}, {}, {});
    return bans;
  }

  // What `bans` hands over to apply within `wait`, until `count` are in. Drains only when
  // its descriptor says so, as the daemon's poll loop does, and counts them applied.
  std::vector<FleetBanVerdict> collect(FleetBans& bans, size_t count,
                                       milliseconds wait = seconds(5)) {
    std::vector<FleetBanVerdict> out;
    const auto end = std::chrono::steady_clock::now() + wait;
    while (out.size() < count && std::chrono::steady_clock::now() < end) {
      std::vector<int> fds = bans.fds();
      if (fds.size() != 1) return out;
      pollfd fd{fds[0], POLLIN, 0};
      if (poll(&fd, 1, 100) <= 0) continue;
      for (FleetBanVerdict& v : bans.drain(256, std::chrono::steady_clock::now())) {
        bans.count(v.result);  // applied or lifted
        out.push_back(std::move(v));
      }
    }
    return out;
  }

  template <class Done>
  bool waitFor(Done done) {
    for (int i = 0; i < 250 && !done(); ++i) std::this_thread::sleep_for(milliseconds(20));
    return done();
  }

  // Publishes a marker ban and waits until every host in `hosts` handed it over: each has
  // read whatever the stream held before (its start's replay included).
  void markerRead(std::initializer_list<FleetBans*> hosts) {
    const Cidr marker = cidr(("198.51.100." + std::to_string(200 + markers_++)).c_str());
    ASSERT_TRUE(
        publishFleetBans(config_, {fleetBanRecord(marker, kMinuteNs, report::BanKind::kManual)})
            .ok());
    for (FleetBans* bans : hosts) {
      auto handed = collect(*bans, 1);
      ASSERT_EQ(handed.size(), 1u);
      ASSERT_EQ(handed[0].record.address, marker);
    }
  }

  // Lets `bans` read what the stream holds (records it refuses hand nothing over).
  void settle(FleetBans& bans, milliseconds wait = milliseconds(1500)) {
    EXPECT_TRUE(collect(bans, 1000, wait).empty());
  }

  int64_t redisNowMs() {
    auto time = server_->command({"TIME"});
    EXPECT_TRUE(time.ok());
    return std::stoll(time->elements[0].str) * 1000 + std::stoll(time->elements[1].str) / 1000;
  }

  void addEntry(const http::StreamReport& entry) {
    auto added = server_->command(http::streamAddCommand(kStream, entry));
    ASSERT_TRUE(added.ok());
    ASSERT_FALSE(added->isError()) << added->str;
  }

  std::unique_ptr<RedisServer> server_;
  config::FleetBansConfig config_;
  int markers_ = 0;
};

TEST_F(FleetBansTest, ABanMadeOnOneHostIsAppliedOnAnotherWithTheSameEnd) {
  auto a = host(config_);
  auto b = host(config_);
  markerRead({b.get()});  // reading from now on
  auto published = a->publish(report::BanKind::kManual, cidr("198.51.100.7"), 10 * kMinuteNs);
  ASSERT_TRUE(published.has_value());
  auto applied = collect(*b, 1);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].record.address.toString(), "198.51.100.7");
  EXPECT_EQ(applied[0].record.expires_ms, published->expires_ms) << "the same absolute end";
  EXPECT_EQ(applied[0].record.kind, report::BanKind::kManual);
  EXPECT_GT(applied[0].ban_ns, 9 * kMinuteNs);
  EXPECT_LE(applied[0].ban_ns, 10 * kMinuteNs + 60'000'000'000ULL);
  EXPECT_NE(applied[0].publisher.find(":" + std::to_string(getpid())), std::string::npos);
  EXPECT_TRUE(waitFor([&] { return a->published().sent == 1u; }));
  EXPECT_EQ(b->received()[metrics::kFleetBanApplied], 2u);  // the marker's, then this one
  EXPECT_TRUE(collect(*b, 1, milliseconds(700)).empty()) << "one record, one ban";
}

TEST_F(FleetBansTest, OnlyTheKindsShareListsArePublished) {
  config::FleetBansConfig manual_only = config_;
  manual_only.share_escalation = manual_only.share_rule = false;
  auto a = host(manual_only);
  EXPECT_FALSE(a->publish(report::BanKind::kRule, cidr("198.51.100.7"), kMinuteNs));
  EXPECT_FALSE(a->publish(report::BanKind::kEscalation, cidr("198.51.100.7"), kMinuteNs));
  EXPECT_FALSE(a->publish(report::BanKind::kManual, cidr("198.51.100.7"), 0)) << "no end";
  EXPECT_FALSE(a->publish(report::BanKind::kManual, cidr("198.51.100.7"), 61 * kMinuteNs));
  EXPECT_TRUE(a->publish(report::BanKind::kManual, cidr("198.51.100.7"), kMinuteNs));
  EXPECT_FALSE(fleetShares(manual_only, report::BanKind::kRule, kMinuteNs).ok());
  EXPECT_FALSE(fleetShares(config::FleetBansConfig{}, report::BanKind::kManual, kMinuteNs).ok());
}

// A rule bans what the packet path saw: an IPv6 frame from ::ffff:a.b.c.d is anyone's to
// send, and every host would read its record as a.b.c.d's ban. Not shared; a manual ban of
// the same address, an operator's, is.
TEST_F(FleetBansTest, ARuleBanOfAnIpv4MappedSourceIsNotShared) {
  auto a = host(config_);
  EXPECT_FALSE(a->publish(report::BanKind::kRule, cidr("::ffff:198.51.100.7"), kMinuteNs));
  EXPECT_TRUE(a->publish(report::BanKind::kRule, cidr("2001:db8::7"), kMinuteNs));
  EXPECT_TRUE(a->publish(report::BanKind::kManual, cidr("::ffff:198.51.100.8"), kMinuteNs));
}

TEST_F(FleetBansTest, AHostStartedLaterReadsBackTheBansStillInForce) {
  const int64_t now = redisNowMs();
  // published before the late host starts: one signed before the longest ban (never read;
  // added first, as its ID is older than any other), one in force (through the CLI's
  // path), and one already over
  const int64_t long_ago = now - static_cast<int64_t>(config_.max_ban_ns / 1'000'000) - 10'000;
  report::BanRecord ancient{cidr("198.51.100.22"), now + 60'000, report::BanKind::kRule, "bb"};
  auto old_entry =
      http::signStreamReport(kSecret, report::formatBanRecord(ancient), "host-a:1", long_ago);
  http::redis::Command xadd = http::streamAddCommand(kStream, old_entry);
  xadd[5] = std::to_string(long_ago) + "-0";  // an ID as old as its signature
  auto added = server_->command(xadd);
  ASSERT_TRUE(added.ok());
  ASSERT_FALSE(added->isError()) << added->str;
  ASSERT_TRUE(publishFleetBans(config_, {fleetBanRecord(cidr("198.51.100.20"), 30 * kMinuteNs,
                                                        report::BanKind::kManual)})
                  .ok());
  report::BanRecord over{cidr("198.51.100.21"), now - 1000, report::BanKind::kRule, "aa"};
  addEntry(http::signStreamReport(kSecret, report::formatBanRecord(over), "host-a:1", now - 5000));

  auto late = host(config_);
  auto applied = collect(*late, 1);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].record.address.toString(), "198.51.100.20");
  EXPECT_LE(applied[0].ban_ns, 30 * kMinuteNs);
  settle(*late);
  EXPECT_EQ(late->received()[metrics::kFleetBanExpired], 1u);
  EXPECT_EQ(late->received()[metrics::kFleetBanStale], 0u) << "read from max_ban back only";
}

TEST_F(FleetBansTest, AStartReplaysTheNewestRecordsUpToItsCap) {
  std::vector<report::BanRecord> records;
  for (int i = 0; i < 7; ++i) {
    records.push_back(fleetBanRecord(cidr(("198.51.100." + std::to_string(60 + i)).c_str()),
                                     30 * kMinuteNs, report::BanKind::kManual));
  }
  ASSERT_TRUE(publishFleetBans(config_, records).ok());
  config::FleetBansConfig capped = config_;
  capped.max_replay = 3;
  auto late = host(capped);
  auto applied = collect(*late, 3);
  ASSERT_EQ(applied.size(), 3u);
  std::set<std::string> addresses;
  for (const FleetBanVerdict& v : applied) addresses.insert(v.record.address.toString());
  EXPECT_EQ(addresses, (std::set<std::string>{"198.51.100.64", "198.51.100.65", "198.51.100.66"}))
      << "the newest three";
  settle(*late);
  // what comes after the start is read as it comes
  auto published = publishFleetBans(
      config_, {fleetBanRecord(cidr("198.51.100.70"), kMinuteNs, report::BanKind::kManual)});
  ASSERT_TRUE(published.ok());
  auto live = collect(*late, 1);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].record.address.toString(), "198.51.100.70");
}

TEST_F(FleetBansTest, ForgedCopiedAndGarbledEntriesAreRefusedAndCounted) {
  auto b = host(config_);
  markerRead({b.get()});  // reading from now on: what follows is live, not its start's replay
  const int64_t now = redisNowMs();
  report::BanRecord ban{cidr("198.51.100.30"), now + 60'000, report::BanKind::kManual, "cc"};
  const std::string line = report::formatBanRecord(ban);
  addEntry(http::signStreamReport("a secret this fleet does not use!!", line, "intruder:1", now));
  const http::StreamReport good = http::signStreamReport(kSecret, line, "host-a:1", now);
  addEntry(good);
  addEntry(good);  // someone who can read the stream adds a copy
  ASSERT_TRUE(server_->command({"XADD", kStream, "*", "ban", "everyone"}).ok());
  report::BanRecord loopback{cidr("127.0.0.1"), now + 60'000, report::BanKind::kManual, "dd"};
  addEntry(http::signStreamReport(kSecret, report::formatBanRecord(loopback), "host-a:1", now));
  report::BanRecord allowed{cidr("192.0.2.9"), now + 60'000, report::BanKind::kManual, "ee"};
  addEntry(http::signStreamReport(kSecret, report::formatBanRecord(allowed), "host-a:1", now));
  auto applied = collect(*b, 1);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].record.address.toString(), "198.51.100.30");
  settle(*b);
  EXPECT_EQ(b->received()[metrics::kFleetBanForged], 1u);
  EXPECT_EQ(b->received()[metrics::kFleetBanReplayed], 1u);
  EXPECT_EQ(b->received()[metrics::kFleetBanMalformed], 1u);
  EXPECT_EQ(b->received()[metrics::kFleetBanLoopback], 1u);
  EXPECT_EQ(b->received()[metrics::kFleetBanAllowListed], 1u);
  EXPECT_EQ(b->received()[metrics::kFleetBanApplied], 2u);  // the marker's, then 198.51.100.30
}

// Bytes Redis has sent to all its clients so far (INFO stats).
int64_t redisBytesSent(const RedisServer& server) {
  auto info = server.command({"INFO", "stats"});
  EXPECT_TRUE(info.ok());
  const std::string field = "total_net_output_bytes:";
  const size_t at = info->str.find(field);
  EXPECT_NE(at, std::string::npos) << info->str;
  return at == std::string::npos ? 0 : std::stoll(info->str.substr(at + field.size()));
}

// Whoever can write the stream, with no secret, must not stall its readers or swamp their
// memory with a huge entry (in bytes, or in fields): each is counted malformed without being
// sent, live and in a later host's replay, and the records after them are read.
TEST_F(FleetBansTest, HugeEntriesAreNotSentAndTheRecordsAfterThemAreRead) {
  auto b = host(config_);
  markerRead({b.get()});
  ASSERT_TRUE(server_->command({"XADD", kStream, "*", "report", std::string(32 << 20, 'x')}).ok());
  http::redis::Command many_fields = {"XADD", kStream, "*"};
  for (int i = 0; i < 100; ++i)
    many_fields.insert(many_fields.end(), {"f" + std::to_string(i), "v"});
  ASSERT_TRUE(server_->command(many_fields).ok());
  const int64_t sent_before = redisBytesSent(*server_);
  markerRead({b.get()});  // the record after them
  EXPECT_EQ(b->received()[metrics::kFleetBanMalformed], 2u);
  auto late = host(config_);
  // its replay: the two markers read above, around the huge entries
  EXPECT_EQ(collect(*late, 2).size(), 2u);
  EXPECT_EQ(late->received()[metrics::kFleetBanMalformed], 2u);
  // two hosts read past a 32 MiB entry (the one starting later in its replay too)
  EXPECT_LT(redisBytesSent(*server_) - sent_before, 1 << 20) << "a huge entry was sent";
}

// An entry given the largest ID there is ends the stream (nothing can be added after it):
// it is read once, and the reader does not start over from the stream's beginning.
TEST_F(FleetBansTest, AnEntryOfTheLargestIdIsReadOnce) {
  auto b = host(config_);
  markerRead({b.get()});
  auto added = server_->command(
      {"XADD", kStream, "18446744073709551615-18446744073709551615", "ban", "everyone"});
  ASSERT_TRUE(added.ok());
  ASSERT_FALSE(added->isError()) << added->str;
  settle(*b);
  EXPECT_EQ(b->received()[metrics::kFleetBanMalformed], 1u);
  EXPECT_EQ(b->received()[metrics::kFleetBanReplayed], 0u) << "the marker read again";
}

// A Redis over its maxmemory refuses writes; reading the stream writes nothing, so a host
// started then still reads the fleet's bans (a writer who fills Redis must not make every
// restarted host deaf to them).
TEST_F(FleetBansTest, AHostReadsTheStreamWhileRedisRefusesWrites) {
  auto b = host(config_);
  markerRead({b.get()});  // the functions are loaded: loading is a write
  ASSERT_TRUE(server_->command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).ok());
  ASSERT_TRUE(server_->command({"CONFIG", "SET", "maxmemory", "1"}).ok());
  auto refused = server_->command({"SET", "fg:probe", "1"});
  ASSERT_TRUE(refused.ok());
  EXPECT_TRUE(refused->isError("OOM")) << "Redis refuses writes: " << refused->str;
  auto late = host(config_);
  EXPECT_EQ(collect(*late, 1).size(), 1u) << "the marker, read back while Redis is full";
  ASSERT_TRUE(server_->command({"CONFIG", "SET", "maxmemory", "0"}).ok());
}

// "ADDRESS" for a ban, "-ADDRESS" for a lift: what a host was handed, in order.
std::vector<std::string> described(const std::vector<FleetBanVerdict>& verdicts) {
  std::vector<std::string> out;
  for (const FleetBanVerdict& v : verdicts) {
    out.push_back((v.lift ? "-" : "") + v.record.address.toString());
  }
  return out;
}

TEST_F(FleetBansTest, ALiftReachesEveryHostAndABanAfterItBansAgain) {
  auto a = host(config_);
  auto b = host(config_);
  markerRead({a.get(), b.get()});  // both reading from now on
  ASSERT_TRUE(a->publish(report::BanKind::kManual, cidr("198.51.100.7"), 10 * kMinuteNs));
  ASSERT_EQ(described(collect(*b, 1)), std::vector<std::string>{"198.51.100.7"});
  ASSERT_TRUE(publishFleetLifts(config_, {fleetLiftRecord(cidr("198.51.100.7"))}).ok());
  auto lifted = collect(*b, 1);
  ASSERT_EQ(described(lifted), std::vector<std::string>{"-198.51.100.7"});
  EXPECT_EQ(lifted[0].result, metrics::kFleetBanLifted);
  EXPECT_NE(lifted[0].publisher.find(":" + std::to_string(getpid())), std::string::npos);
  EXPECT_EQ(b->received()[metrics::kFleetBanLifted], 1u);
  // the publisher's own daemon reads it too: every host lifts, the one that banned included
  EXPECT_EQ(described(collect(*a, 2)), (std::vector<std::string>{"198.51.100.7", "-198.51.100.7"}));
  ASSERT_TRUE(a->publish(report::BanKind::kManual, cidr("198.51.100.7"), 10 * kMinuteNs));
  EXPECT_EQ(described(collect(*b, 1)), std::vector<std::string>{"198.51.100.7"})
      << "stream order is the order: a ban after the lift bans again";
}

TEST_F(FleetBansTest, AHostStartedLaterDoesNotApplyABanLiftedBefore) {
  ASSERT_TRUE(publishFleetBans(
                  config_,
                  {fleetBanRecord(cidr("198.51.100.80"), 30 * kMinuteNs, report::BanKind::kManual),
                   fleetBanRecord(cidr("198.51.100.81"), 30 * kMinuteNs, report::BanKind::kManual)})
                  .ok());
  ASSERT_TRUE(publishFleetLifts(config_, {fleetLiftRecord(cidr("198.51.100.80"))}).ok());
  auto late = host(config_);
  auto handed = collect(*late, 2);
  // what a host running all along ends with: the ban lifted by nobody, and the lift (which
  // a restarted host may still hold the ban of); the lifted ban is not applied
  EXPECT_EQ(described(handed), (std::vector<std::string>{"198.51.100.81", "-198.51.100.80"}));
  settle(*late);
  EXPECT_EQ(late->received()[metrics::kFleetBanSuperseded], 1u);
  EXPECT_EQ(late->received()[metrics::kFleetBanApplied], 1u);
  EXPECT_EQ(late->received()[metrics::kFleetBanLifted], 1u);
}

// The offender reports a start reads back wait for the fleet's lifts it reads back: until its
// replay is handed over, or a while at most (a Redis out of reach must not hold them for good).
TEST_F(FleetBansTest, TheReplayIsPendingUntilItIsHandedOverOrAWhileAtMost) {
  EXPECT_FALSE(FleetBans().replayPending(std::chrono::steady_clock::now())) << "no fleet.bans";
  ASSERT_TRUE(publishFleetLifts(config_, {fleetLiftRecord(cidr("198.51.100.85"))}).ok());
  auto late = host(config_);
  const auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(late->replayPending(started));
  EXPECT_FALSE(late->replayPending(started + FleetBans::kReplayWait));
  EXPECT_EQ(described(collect(*late, 1)), (std::vector<std::string>{"-198.51.100.85"}));
  EXPECT_FALSE(late->replayPending(std::chrono::steady_clock::now()));
  config::FleetBansConfig moved = config_;
  moved.stream = "fg:bans:elsewhere";
  late->sync(moved, {}, {}, {});
  EXPECT_TRUE(late->replayPending(std::chrono::steady_clock::now()))
      << "a new stream, a new replay";
}

TEST_F(FleetBansTest, AHostStartedLaterAppliesABanMadeAgainAfterALift) {
  const Cidr address = cidr("198.51.100.90");
  ASSERT_TRUE(
      publishFleetBans(config_, {fleetBanRecord(address, 50 * kMinuteNs, report::BanKind::kManual)})
          .ok());
  ASSERT_TRUE(publishFleetLifts(config_, {fleetLiftRecord(address)}).ok());
  ASSERT_TRUE(
      publishFleetBans(config_, {fleetBanRecord(address, 20 * kMinuteNs, report::BanKind::kRule)})
          .ok());
  auto late = host(config_);
  auto handed = collect(*late, 2);
  // the lift (a restarted host may hold the first, longer, ban), then the ban made after it
  ASSERT_EQ(described(handed), (std::vector<std::string>{"-198.51.100.90", "198.51.100.90"}));
  EXPECT_EQ(handed[1].record.kind, report::BanKind::kRule) << "the ban made after the lift";
  EXPECT_LE(handed[1].ban_ns, 20 * kMinuteNs) << "the first ban's longer end is gone";
  settle(*late);
  EXPECT_EQ(late->received()[metrics::kFleetBanSuperseded], 1u) << "the first ban";
  // and after the read-back, what comes is read in order again
  ASSERT_TRUE(publishFleetLifts(config_, {fleetLiftRecord(address)}).ok());
  EXPECT_EQ(described(collect(*late, 1)), std::vector<std::string>{"-198.51.100.90"});
}

TEST_F(FleetBansTest, ACopiedLiftAndAForgedOneAreRefused) {
  auto b = host(config_);
  markerRead({b.get()});  // its replay is over: what comes next is read as it comes
  const int64_t now = redisNowMs();
  const std::string line = report::formatLiftRecord({cidr("198.51.100.7"), "ab12"});
  addEntry(http::signStreamReport("a secret this fleet does not use!!", line, "intruder:1", now));
  const http::StreamReport good = http::signStreamReport(kSecret, line, "host-a:1", now);
  addEntry(good);
  ASSERT_TRUE(publishFleetBans(config_, {fleetBanRecord(cidr("198.51.100.7"), kMinuteNs,
                                                        report::BanKind::kRule)})
                  .ok());
  addEntry(good);  // someone who can read the stream adds the lift again, after a new ban
  auto handed = collect(*b, 2);
  EXPECT_EQ(described(handed), (std::vector<std::string>{"-198.51.100.7", "198.51.100.7"}));
  settle(*b);
  EXPECT_EQ(b->received()[metrics::kFleetBanForged], 1u);
  EXPECT_EQ(b->received()[metrics::kFleetBanReplayed], 1u);
  EXPECT_EQ(b->received()[metrics::kFleetBanLifted], 1u);
}

// A copy of a signed record re-added by someone who can write to the stream: a host that
// starts later refuses it as a running host does, and ends as the running hosts are.
TEST_F(FleetBansTest, AStartRefusesACopiedBanAsARunningHostDoes) {
  auto running = host(config_);
  markerRead({running.get()});
  const int64_t now = redisNowMs();
  const Cidr address = cidr("198.51.100.95");
  const http::StreamReport ban = http::signStreamReport(
      kSecret, report::formatBanRecord({address, now + 600'000, report::BanKind::kManual, "b1"}),
      "host-a:1", now);
  addEntry(ban);
  ASSERT_TRUE(publishFleetLifts(config_, {fleetLiftRecord(address)}).ok());
  addEntry(ban);  // the ban added again after its lift
  EXPECT_EQ(described(collect(*running, 2)),
            (std::vector<std::string>{"198.51.100.95", "-198.51.100.95"}));
  auto late = host(config_);
  EXPECT_EQ(described(collect(*late, 2)),
            (std::vector<std::string>{"198.51.100.200", "-198.51.100.95"}))
      << "the start ends lifted, as the running host";
  settle(*late);
  settle(*running);
  for (FleetBans* bans : {running.get(), late.get()}) {
    EXPECT_EQ(bans->received()[metrics::kFleetBanReplayed], 1u);
    EXPECT_EQ(bans->received()[metrics::kFleetBanLifted], 1u) << "lifted, the copy refused";
  }
}

TEST_F(FleetBansTest, AStartRefusesACopiedLiftAsARunningHostDoes) {
  auto running = host(config_);
  markerRead({running.get()});
  const int64_t now = redisNowMs();
  const Cidr address = cidr("198.51.100.96");
  const http::StreamReport lift =
      http::signStreamReport(kSecret, report::formatLiftRecord({address, "a1"}), "host-b:1", now);
  addEntry(lift);
  ASSERT_TRUE(
      publishFleetBans(config_, {fleetBanRecord(address, 10 * kMinuteNs, report::BanKind::kManual)})
          .ok());
  addEntry(lift);  // the lift added again after a new ban, to undo it
  EXPECT_EQ(described(collect(*running, 2)),
            (std::vector<std::string>{"-198.51.100.96", "198.51.100.96"}));
  auto late = host(config_);
  std::vector<FleetBanVerdict> handed = collect(*late, 3);
  EXPECT_EQ(described(handed),
            (std::vector<std::string>{"198.51.100.200", "-198.51.100.96", "198.51.100.96"}))
      << "the start ends banned, as the running host";
  settle(*late);
  settle(*running);
  EXPECT_EQ(late->received()[metrics::kFleetBanReplayed], 1u);
  EXPECT_EQ(running->received()[metrics::kFleetBanReplayed], 1u);
}

TEST_F(FleetBansTest, ALiftThatCannotReachRedisSaysSo) {
  EXPECT_FALSE(fleetLifts(config_, cidr("198.51.0.0/16")).ok()) << "wider than any fleet ban";
  EXPECT_FALSE(fleetLifts(config::FleetBansConfig{}, cidr("198.51.100.7")).ok());
  EXPECT_TRUE(fleetLifts(config_, cidr("198.51.100.0/24")).ok());
  server_->kill();
  Status lifted = publishFleetLifts(config_, {fleetLiftRecord(cidr("198.51.100.7"))});
  ASSERT_FALSE(lifted.ok());
  EXPECT_NE(lifted.error().message.find("1 of 1 lifts did not reach redis stream fg:bans"),
            std::string::npos)
      << lifted.error().message;
}

TEST_F(FleetBansTest, ALiftThatFailsHereForOneCidrStillSharesTheOthers) {
  auto b = host(config_);
  markerRead({b.get()});
  std::ostringstream out;
  Status lifted = liftBans(
      &config_, {cidr("198.51.100.1"), cidr("198.51.100.2"), cidr("198.51.100.3")},
      [](const Cidr& c) -> Result<bool> {
        if (c.toString() == "198.51.100.2") return Error::failure("the ban table is locked");
        return c.toString() == "198.51.100.1";
      },
      out);
  ASSERT_FALSE(lifted.ok());
  EXPECT_EQ(lifted.error().message, "could not lift 198.51.100.2: the ban table is locked");
  EXPECT_EQ(out.str(),
            "unbanned 198.51.100.1\nwas not banned: 198.51.100.3\n"
            "lift shared with the fleet through redis stream fg:bans\n");
  EXPECT_EQ(described(collect(*b, 2)), (std::vector<std::string>{"-198.51.100.1", "-198.51.100.3"}))
      << "what was lifted here (or not banned here) is shared all the same";
}

TEST_F(FleetBansTest, WithRedisGonePublishingFailsBoundedAndReadingResumes) {
  auto a = host(config_);
  auto b = host(config_);
  markerRead({a.get(), b.get()});  // both reading from now on
  server_->kill();
  ASSERT_TRUE(a->publish(report::BanKind::kManual, cidr("198.51.100.40"), kMinuteNs));
  EXPECT_TRUE(waitFor([&] { return a->published().failed == 1u; }))
      << "tried, then counted: the ban on the publishing host stands regardless";
  EXPECT_FALSE(publishFleetBans(config_, {fleetBanRecord(cidr("198.51.100.41"), kMinuteNs,
                                                         report::BanKind::kManual)})
                   .ok());
  ASSERT_TRUE(server_->restart());
  auto published = a->publish(report::BanKind::kManual, cidr("198.51.100.42"), kMinuteNs);
  ASSERT_TRUE(published.has_value());
  auto applied = collect(*b, 1, seconds(10));
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].record.address.toString(), "198.51.100.42");
  EXPECT_EQ(applied[0].record.expires_ms, published->expires_ms);
}

TEST_F(FleetBansTest, AChangedConfigStopsOrMovesTheStream) {
  auto b = host(config_);
  EXPECT_EQ(b->fds().size(), 1u);
  b->sync(config::FleetBansConfig{}, {}, {}, {});
  EXPECT_TRUE(b->fds().empty());
  EXPECT_FALSE(b->publish(report::BanKind::kManual, cidr("198.51.100.7"), kMinuteNs));
  config::FleetBansConfig moved = config_;
  moved.stream = "fg:bans:other";
  b->sync(moved, {}, {}, {});
  ASSERT_EQ(b->fds().size(), 1u);
  std::this_thread::sleep_for(milliseconds(300));
  auto a = host(config_);
  ASSERT_TRUE(a->publish(report::BanKind::kManual, cidr("198.51.100.50"), kMinuteNs));
  EXPECT_TRUE(collect(*b, 1, milliseconds(1500)).empty()) << "another stream";
  b->close();
}

}  // namespace
}  // namespace floodgate::daemon
