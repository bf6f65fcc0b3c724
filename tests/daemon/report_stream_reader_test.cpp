// SPDX-License-Identifier: MIT
// Offender reports through a Redis stream, against a private redis-server: the library's
// OffenderReporter adds signed entries and the daemon's StreamReportReader reads them;
// forged, garbled and old entries; a Redis that goes away and comes back.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <thread>

#include "daemon/stream_report_reader.h"
#include "floodgate/fleet/offender_reporter.h"
#include "floodgate/fleet/report_stream.h"
#include "redis/redis_server.h"

namespace floodgate::daemon {
namespace {

using http::testing::RedisServer;
namespace redis = http::redis;

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
constexpr const char* kStream = "fg:reports";

class ReportStreamReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (http::testing::haveRedis()) server_ = RedisServer::start();
    if (server_ == nullptr) GTEST_SKIP() << "redis-server is not installed or did not start";
    http_.store.type = "redis";
    http_.store.address = server_->address().text();
    http_.escalate.enabled = true;
    http_.escalate.rejections = 5;
    http_.escalate.within_ms = 10'000;
    http_.escalate.ban_ns = 60'000'000'000ULL;
    http_.escalate.redis_stream = kStream;
    http_.escalate.secret = kSecret;
  }

  std::unique_ptr<StreamReportReader> startReader() {
    auto reader = StreamReportReader::start(
        {http::reportClientOptions(http_.store), kStream, kSecret, http_.escalate.ban_ns});
    EXPECT_TRUE(reader.ok());
    return reader.ok() ? std::move(*reader) : nullptr;
  }

  // What the reader hands over within `wait`, until `count` reports are in. Drains only
  // when its descriptor says so, as the daemon's poll loop does.
  std::vector<ReceivedReport> collect(StreamReportReader& reader, size_t count,
                                      std::chrono::milliseconds wait = std::chrono::seconds(5),
                                      size_t per_drain = 256) {
    std::vector<ReceivedReport> out;
    const auto end = std::chrono::steady_clock::now() + wait;
    while (out.size() < count && std::chrono::steady_clock::now() < end) {
      pollfd fd{reader.fd(), POLLIN, 0};
      if (poll(&fd, 1, 100) <= 0) continue;
      for (ReceivedReport& r : reader.drain(per_drain)) out.push_back(std::move(r));
    }
    return out;
  }

  template <class Done>
  bool waitFor(Done done) {
    for (int i = 0; i < 250 && !done(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
  }

  void addSigned(const std::string& line, int64_t time_ms, const std::string& id = "*") {
    add(id, http::signStreamReport(kSecret, line, "web:1", time_ms));
  }

  int64_t redisNowMs() {
    auto time = server_->command({"TIME"});
    EXPECT_TRUE(time.ok());
    return std::stoll(time->elements[0].str) * 1000 + std::stoll(time->elements[1].str) / 1000;
  }

  void add(const std::string& id, const http::StreamReport& report) {
    redis::Command xadd = http::streamAddCommand(kStream, report);
    xadd[5] = id;  // the entry's ID instead of "*"
    auto added = server_->command(xadd);
    ASSERT_TRUE(added.ok());
    ASSERT_FALSE(added->isError()) << added->str;
  }

  std::unique_ptr<RedisServer> server_;
  http::HttpConfig http_;
  // every report that parsed could ban, as the daemon's guard says of these test addresses
};

TEST_F(ReportStreamReaderTest, AServicesReportReachesTheControllerSignedAndFresh) {
  auto reader = startReader();
  ASSERT_NE(reader, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // reading from now on
  auto reporter =
      http::OffenderReporter::create(http_, std::make_shared<http::ManualClock>(1'000'000'000));
  ASSERT_TRUE(reporter.ok()) << reporter.error().message;
  for (int i = 0; i < 50; ++i) (*reporter)->noteRejection("198.51.100.7");
  auto reports = collect(*reader, 1);
  ASSERT_EQ(reports.size(), 1u) << "one report for the whole flood of rejections";
  ASSERT_TRUE(reports[0].report.ok()) << reports[0].report.error().message;
  EXPECT_EQ(reports[0].report->address.toString(), "198.51.100.7");
  EXPECT_EQ(reports[0].report->rejections, 5);
  EXPECT_FALSE(reports[0].unauthorised);
  EXPECT_NE(reports[0].sender.find("redis entry "), std::string::npos) << reports[0].sender;
  EXPECT_NE(reports[0].sender.find(":" + std::to_string(getpid())), std::string::npos);
  EXPECT_LT(reports[0].age_ns, 5'000'000'000ULL);
  EXPECT_FALSE(reports[0].replayed) << "read live, charged to the live quotas";
  EXPECT_TRUE(waitFor([&] { return (*reporter)->reportsSent() == 1u; }));
  EXPECT_TRUE(collect(*reader, 1, std::chrono::milliseconds(700)).empty());
}

TEST_F(ReportStreamReaderTest, ForgedEntriesAreUnauthorisedAndGarbageIsInvalid) {
  auto reader = startReader();
  ASSERT_NE(reader, nullptr);
  const int64_t now = redisNowMs();
  http::StreamReport forged =
      http::signStreamReport("a secret this fleet does not use!!",
                             "offender 192.0.2.1 rejections=5 within_ms=1", "intruder:1", now);
  ASSERT_TRUE(server_->command(http::streamAddCommand(kStream, forged)).ok());
  ASSERT_TRUE(server_->command({"XADD", kStream, "*", "ban", "everyone"}).ok());
  // signed by the fleet but not a report line: invalid, not unauthorised
  ASSERT_TRUE(server_
                  ->command(http::streamAddCommand(
                      kStream, http::signStreamReport(kSecret, "ban everyone", "web:1", now)))
                  .ok());
  auto reports = collect(*reader, 3);
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_FALSE(reports[0].report.ok());
  EXPECT_TRUE(reports[0].unauthorised);
  EXPECT_NE(reports[0].sender.find("from intruder:1"), std::string::npos);
  EXPECT_FALSE(reports[1].report.ok());
  EXPECT_FALSE(reports[1].unauthorised);
  EXPECT_FALSE(reports[2].report.ok());
  EXPECT_FALSE(reports[2].unauthorised);
}

TEST_F(ReportStreamReaderTest, AStartingControllerReadsBackOneBanTimeAndAgesWhatItReads) {
  const int64_t now = redisNowMs();
  const std::string old_line = "offender 192.0.2.1 rejections=5 within_ms=10000";
  const std::string recent_line = "offender 192.0.2.2 rejections=5 within_ms=10000";
  addSigned(old_line, now - 180'000, std::to_string(now - 180'000) + "-0");
  addSigned(recent_line, now - 10'000, std::to_string(now - 10'000) + "-0");
  auto reader = startReader();
  ASSERT_NE(reader, nullptr);
  auto reports = collect(*reader, 1);
  ASSERT_EQ(reports.size(), 1u) << "the report from before the ban time is not read";
  ASSERT_TRUE(reports[0].report.ok()) << reports[0].report.error().message;
  EXPECT_EQ(reports[0].report->address.toString(), "192.0.2.2");
  EXPECT_GE(reports[0].age_ns, 10'000'000'000ULL);
  EXPECT_LT(reports[0].age_ns, 20'000'000'000ULL);
  EXPECT_TRUE(reports[0].replayed) << "the start's replay has quotas of its own";
}

TEST_F(ReportStreamReaderTest, ReadingGoesOnAfterRedisComesBack) {
  auto reader = startReader();
  ASSERT_NE(reader, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  server_->kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the reader notices
  ASSERT_TRUE(server_->restart());
  const int64_t now = redisNowMs();
  ASSERT_TRUE(
      server_
          ->command(http::streamAddCommand(
              kStream, http::signStreamReport(
                           kSecret, "offender 2001:db8::7 rejections=5 within_ms=1", "web:1", now)))
          .ok());
  auto reports = collect(*reader, 1, std::chrono::seconds(10));
  ASSERT_EQ(reports.size(), 1u);
  ASSERT_TRUE(reports[0].report.ok());
  EXPECT_EQ(reports[0].report->address.toString(), "2001:db8::7");
}

TEST_F(ReportStreamReaderTest, ACopyAddedAgainIsUnauthorisedAndAFutureIdBlocksNothing) {
  auto reader = startReader();
  ASSERT_NE(reader, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int64_t now = redisNowMs();
  const std::string line = "offender 192.0.2.9 rejections=5 within_ms=1";
  const http::StreamReport report = http::signStreamReport(kSecret, line, "web:1", now);
  add("*", report);
  add("*", report);  // someone who can read the stream adds a copy
  // an entry whose ID is far in the future: every later "*" ID comes after it
  ASSERT_TRUE(server_->command({"XADD", kStream, "9999999999999-0", "ban", "everyone"}).ok());
  addSigned("offender 192.0.2.10 rejections=5 within_ms=1", now);
  auto reports = collect(*reader, 4);
  ASSERT_EQ(reports.size(), 4u);
  ASSERT_TRUE(reports[0].report.ok());
  EXPECT_TRUE(reports[1].unauthorised);
  EXPECT_NE(reports[1].report.error().message.find("read before"), std::string::npos);
  EXPECT_FALSE(reports[2].report.ok());
  ASSERT_TRUE(reports[3].report.ok()) << reports[3].report.error().message;
  EXPECT_EQ(reports[3].report->address.toString(), "192.0.2.10");
}

// Anyone who can write the stream could add an entry of a future ID (the largest there is,
// after which no ID can follow; or one 30 s ahead, again and again), let the readers read
// it, and delete the stream: every later entry would come before it and be skipped, for
// good or until the clock passes it. The reader sees the stream went back and reads it again
// from its look back.
TEST_F(ReportStreamReaderTest, AStreamDeletedAfterAnEntryOfAFutureIdIsReadAgain) {
  auto reader = startReader();
  ASSERT_NE(reader, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int address = 30;
  const std::string soon = std::to_string(redisNowMs() + 30'000) + "-0";
  for (const std::string& future :
       {std::string("18446744073709551615-18446744073709551615"), soon}) {
    SCOPED_TRACE(future);
    ASSERT_TRUE(server_->command({"XADD", kStream, future, "ban", "everyone"}).ok());
    ASSERT_EQ(collect(*reader, 1).size(), 1u) << "the entry of the future ID is read";
    ASSERT_TRUE(server_->command({"DEL", kStream}).ok());
    const std::string source = "192.0.2." + std::to_string(address++);
    addSigned("offender " + source + " rejections=5 within_ms=1", redisNowMs());
    auto reports = collect(*reader, 1, std::chrono::seconds(15));
    ASSERT_EQ(reports.size(), 1u) << "read again after the stream went back";
    ASSERT_TRUE(reports[0].report.ok()) << reports[0].report.error().message;
    EXPECT_EQ(reports[0].report->address.toString(), source);
    EXPECT_FALSE(reports[0].replayed) << "only the start's own replay is charged apart";
  }
}

// The quota counts a stream reporter by the host it names, apart from the socket's reporters:
// one that names itself "uid 33" spends no quota of the local user 33.
TEST_F(ReportStreamReaderTest, AStreamReporterIsCountedApartFromTheSocketsUsers) {
  auto reader = startReader();
  ASSERT_NE(reader, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  add("*", http::signStreamReport(kSecret, "offender 192.0.2.14 rejections=5 within_ms=1",
                                  "uid 33:811", redisNowMs()));
  auto reports = collect(*reader, 1);
  ASSERT_EQ(reports.size(), 1u);
  ASSERT_TRUE(reports[0].report.ok()) << reports[0].report.error().message;
  EXPECT_EQ(reports[0].reporter, "stream uid 33");
}

// Entries signed with the fleet's secret that are not reports become nothing however many
// come, so they take no room in the memory of reports read.
TEST_F(ReportStreamReaderTest, SignedEntriesThatAreNotReportsAreNotRemembered) {
  auto reader = startReader();
  ASSERT_NE(reader, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int64_t now = redisNowMs();
  for (int i = 0; i < 20; ++i) addSigned("junk " + std::to_string(i), now);
  addSigned("offender 192.0.2.11 rejections=5 within_ms=1", now);
  auto reports = collect(*reader, 21);
  ASSERT_EQ(reports.size(), 21u);
  EXPECT_FALSE(reports[0].report.ok());
  EXPECT_TRUE(reports[20].report.ok());
  EXPECT_EQ(reader->remembered(), 1u);
}

TEST_F(ReportStreamReaderTest, WhatOneDrainLeavesKeepsTheDescriptorReadable) {
  const int64_t now = redisNowMs();
  for (int i = 0; i < 5; ++i) {
    addSigned("offender 192.0.2." + std::to_string(20 + i) + " rejections=5 within_ms=1", now);
  }
  auto reader = startReader();
  ASSERT_NE(reader, nullptr);
  auto reports = collect(*reader, 5, std::chrono::seconds(5), 2);  // two per poll wakeup
  EXPECT_EQ(reports.size(), 5u);
}

// The daemon retires a reader with stop() and destroys it once stopped(): its thread must
// end by itself, also when Redis is gone and its calls fail.
TEST_F(ReportStreamReaderTest, AStoppedReaderEndsByItselfEvenWithRedisGone) {
  auto reader = startReader();
  ASSERT_NE(reader, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server_->kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(reader->stopped()) << "it keeps trying while not asked to stop";
  reader->stop();
  EXPECT_TRUE(waitFor([&] { return reader->stopped(); }));
}

}  // namespace
}  // namespace floodgate::daemon
