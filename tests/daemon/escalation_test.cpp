// SPDX-License-Identifier: MIT
// Handing abusers from a service to the controller: the library's OffenderReporter counts
// rejections per client and reports over a real Unix socket to the daemon's ReportListener.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "daemon/report_listener.h"
#include "floodgate/core/config_parser.h"
#include "floodgate/fleet/live_reporter.h"
#include "floodgate/fleet/offender_reporter.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {
namespace {

class EscalationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fg-escalate-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    config_.enabled = true;
    config_.rejections = 5;
    config_.within_ms = 10000;
    config_.ban_ns = 60'000'000'000ULL;
    config_.socket = dir_ + "/reports.sock";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<http::OffenderReporter> reporter() {
    http::HttpConfig http;
    http.escalate = config_;
    auto made = http::OffenderReporter::create(http, clock_);
    EXPECT_TRUE(made.ok());
    return std::move(*made);
  }

  std::string dir_;
  http::EscalateConfig config_;
  std::shared_ptr<http::ManualClock> clock_ = std::make_shared<http::ManualClock>(1'000'000'000);
};

TEST_F(EscalationTest, AClientIsReportedOnceWhenItCrossesTheLimitWithinTheWindow) {
  auto listener = ReportListener::bind(config_.socket);
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  EXPECT_EQ(std::filesystem::status(config_.socket).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read | std::filesystem::perms::group_write);
  auto sender = reporter();
  for (int i = 0; i < 4; ++i) sender->noteRejection("198.51.100.7");
  EXPECT_TRUE(listener->drain(10).empty()) << "four rejections are under the limit";
  sender->noteRejection("198.51.100.7");
  for (int i = 0; i < 100; ++i) sender->noteRejection("198.51.100.7");  // the flood goes on
  auto reports = listener->drain(10);
  ASSERT_EQ(reports.size(), 1u) << "one report, however long the flood";
  ASSERT_TRUE(reports[0].report.ok());
  EXPECT_EQ(reports[0].report->address.toString(), "198.51.100.7");
  EXPECT_EQ(reports[0].sender,
            "pid " + std::to_string(getpid()) + " uid " + std::to_string(getuid()));
  EXPECT_EQ(sender->reportsSent(), 1u);
  // after the ban time it may be reported again
  clock_->advanceNs(61'000'000'000);
  for (int i = 0; i < 5; ++i) sender->noteRejection("198.51.100.7");
  EXPECT_EQ(listener->drain(10).size(), 1u);
}

// A report the controller refused (its quota for this reporter spent by other clients) must
// not leave the client free for a ban time of a day: one still rejected past the threshold a
// minute later is reported again, two minutes after that report, and so on. A banned one no
// longer reaches the service.
TEST_F(EscalationTest, AClientStillRejectedAMinuteAfterItsReportIsReportedAgain) {
  config_.ban_ns = 86'400'000'000'000ULL;  // a day
  auto listener = ReportListener::bind(config_.socket);
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  auto sender = reporter();
  for (int i = 0; i < 5; ++i) sender->noteRejection("198.51.100.7");
  ASSERT_EQ(listener->drain(10).size(), 1u);
  clock_->advanceNs(http::OffenderReporter::kReportAgainNs - 1);
  for (int i = 0; i < 5; ++i) sender->noteRejection("198.51.100.7");
  EXPECT_TRUE(listener->drain(10).empty()) << "quiet for a minute";
  clock_->advanceNs(1);
  for (int i = 0; i < 4; ++i) sender->noteRejection("198.51.100.7");
  EXPECT_TRUE(listener->drain(10).empty()) << "counted afresh: four are under the limit";
  sender->noteRejection("198.51.100.7");
  EXPECT_EQ(listener->drain(10).size(), 1u);
  // a ban that does not keep it away (monitor mode, another way in): each report again
  // doubles the quiet time, so it costs a few reports a ban time, not one a minute
  clock_->advanceNs(2 * http::OffenderReporter::kReportAgainNs - 1);
  for (int i = 0; i < 5; ++i) sender->noteRejection("198.51.100.7");
  EXPECT_TRUE(listener->drain(10).empty()) << "quiet for two minutes after the second report";
  clock_->advanceNs(1);
  for (int i = 0; i < 5; ++i) sender->noteRejection("198.51.100.7");
  EXPECT_EQ(listener->drain(10).size(), 1u);
}

std::string nthClient(size_t i) {
  return "10." + std::to_string(i / 65536) + "." + std::to_string(i / 256 % 256) + "." +
         std::to_string(i % 256);
}

// A table full of clients each rejected now and then, under the threshold (a /48's /64s, a
// botnet's addresses), takes a new client in place of one of them: one that then crosses
// the threshold is reported. An entry that holds a report keeps its place, and its quiet time.
TEST_F(EscalationTest, AFullTableOfClientsUnderTheThresholdStillReportsOneThatCrossesIt) {
  auto listener = ReportListener::bind(config_.socket);
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  auto sender = reporter();
  for (size_t i = 0; i < http::OffenderReporter::kMaxTracked; ++i) {
    sender->noteRejection(nthClient(i));
  }
  for (int i = 0; i < 4; ++i) sender->noteRejection(nthClient(1));
  ASSERT_EQ(listener->drain(10).size(), 1u) << "the second client reported: quiet for a minute";
  // the table is full, every entry within its window; the attacker's keys keep coming
  for (size_t i = 0; i < 4096; ++i) sender->noteRejection(nthClient(100'000 + i));
  for (int i = 0; i < 5; ++i) sender->noteRejection("192.0.2.1");
  std::vector<ReceivedReport> reports = listener->drain(10);
  ASSERT_EQ(reports.size(), 1u) << "the client crossing the threshold is reported";
  ASSERT_TRUE(reports[0].report.ok());
  EXPECT_EQ(reports[0].report->address.toString(), "192.0.2.1");
  EXPECT_EQ(sender->dropped(), 0u);
  for (int i = 0; i < 5; ++i) sender->noteRejection(nthClient(1));
  EXPECT_TRUE(listener->drain(10).empty()) << "its entry stayed, quiet: not reported again";
}

// Past its bound, the table takes a new client once an entry's window and quiet time are
// over; only when every entry drawn holds a report is the new client not counted.
TEST_F(EscalationTest, AFullTableOfReportedClientsCountsANewOneDroppedUntilAnEntryIsOver) {
  config_.rejections = 1;    // each client reported at its first rejection
  auto sender = reporter();  // no listener: every report fails, and waits to be sent again
  for (size_t i = 0; i < http::OffenderReporter::kMaxTracked; ++i) {
    sender->noteRejection(nthClient(i));
  }
  sender->noteRejection("192.0.2.1");
  EXPECT_EQ(sender->dropped(), 1u) << "full of clients holding reports";
  clock_->advanceNs(config_.within_ms * 1'000'000);  // every window is over, and quiet time
  sender->noteRejection("192.0.2.1");
  EXPECT_EQ(sender->dropped(), 1u) << "an entry that is over made room";
}

TEST_F(EscalationTest, RejectionsSpreadWiderThanTheWindowAreNotReported) {
  auto listener = ReportListener::bind(config_.socket);
  ASSERT_TRUE(listener.ok());
  auto sender = reporter();
  for (int i = 0; i < 20; ++i) {
    sender->noteRejection("192.0.2.1");
    clock_->advanceNs(3'000'000'000);  // at most 4 in any 10 s window: under the 5
  }
  EXPECT_TRUE(listener->drain(10).empty());
  EXPECT_EQ(sender->reportsSent(), 0u);
}

TEST_F(EscalationTest, NoControllerListeningIsCountedNotFatal) {
  auto sender = reporter();
  for (int i = 0; i < 5; ++i) sender->noteRejection("192.0.2.1");
  EXPECT_EQ(sender->reportsSent(), 0u);
  EXPECT_EQ(sender->reportErrors(), 1u);
}

// A report the controller was not there for (restarting, say) is sent again on a rejection
// a second later, not after a whole ban time in which the abuser would go unbanned.
TEST_F(EscalationTest, AReportNobodyReceivedIsSentAgainOnALaterRejection) {
  auto sender = reporter();
  for (int i = 0; i < 5; ++i) sender->noteRejection("192.0.2.1");
  ASSERT_EQ(sender->reportErrors(), 1u);
  sender->noteRejection("192.0.2.1");
  EXPECT_EQ(sender->reportErrors(), 1u) << "not a datagram a rejection while nobody listens";
  clock_->advanceNs(http::OffenderReporter::kResendNs);
  sender->noteRejection("192.0.2.1");
  EXPECT_EQ(sender->reportErrors(), 2u) << "tried again a second later";

  auto listener = ReportListener::bind(config_.socket);
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  clock_->advanceNs(http::OffenderReporter::kResendNs);
  sender->noteRejection("192.0.2.1");
  auto reports = listener->drain(10);
  ASSERT_EQ(reports.size(), 1u) << "the first rejection once the controller is back reports";
  ASSERT_TRUE(reports[0].report.ok());
  EXPECT_EQ(reports[0].report->address.toString(), "192.0.2.1");
  for (int i = 0; i < 10; ++i) sender->noteRejection("192.0.2.1");
  clock_->advanceNs(http::OffenderReporter::kResendNs);
  sender->noteRejection("192.0.2.1");
  EXPECT_TRUE(listener->drain(10).empty()) << "once sent, quiet for the ban time again";
  EXPECT_EQ(sender->reportsSent(), 1u);
}

TEST_F(EscalationTest, GarbageOnTheSocketIsReportedAsInvalid) {
  auto listener = ReportListener::bind(config_.socket);
  ASSERT_TRUE(listener.ok());
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strcpy(address.sun_path, config_.socket.c_str());
  const char junk[] = "ban everyone";
  ASSERT_EQ(
      sendto(fd, junk, sizeof(junk) - 1, 0, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
      static_cast<ssize_t>(sizeof(junk) - 1));
  close(fd);
  auto reports = listener->drain(10);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FALSE(reports[0].report.ok());
}

TEST_F(EscalationTest, TheSocketFileGoesWithTheListenerAndAStaleOneIsReplaced) {
  {
    // what a run that crashed leaves: a socket file nobody has open
    UniqueFd crashed(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, config_.socket.c_str(), config_.socket.size());
    ASSERT_EQ(::bind(crashed.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    crashed.reset();
    ASSERT_TRUE(std::filesystem::exists(config_.socket));
    auto again = ReportListener::bind(config_.socket);
    ASSERT_TRUE(again.ok()) << again.error().message;
  }
  EXPECT_FALSE(std::filesystem::exists(config_.socket));
}

// Two daemons of two network namespaces sharing /run, both on the default socket: the second
// is refused the path rather than taking it, which would leave the first running without a
// report ever again.
TEST_F(EscalationTest, TheSocketOfAnotherRunningListenerIsNotTaken) {
  auto first = ReportListener::bind(config_.socket);
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto second = ReportListener::bind(config_.socket);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().message,
            config_.socket +
                " is the report socket of another running floodgate (a daemon of another network "
                "namespace?): give each its own http.escalate.socket: Address already in use");
  UniqueFd sender(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, config_.socket.c_str(), config_.socket.size());
  const char datagram[] = "a report";
  ASSERT_EQ(sendto(sender.get(), datagram, sizeof(datagram) - 1, 0,
                   reinterpret_cast<sockaddr*>(&address), sizeof(address)),
            static_cast<ssize_t>(sizeof(datagram) - 1));
  EXPECT_EQ(first->drain(10).size(), 1u) << "the first still gets what is sent to the path";
}

// A published set that changes http.escalate reaches a running service: the threshold and
// the socket follow the current set, and a set without escalate reports nothing.
TEST_F(EscalationTest, AServiceFollowsThePublishedEscalationWithoutARestart) {
  auto first = ReportListener::bind(config_.socket);
  auto second = ReportListener::bind(dir_ + "/other.sock");
  ASSERT_TRUE(first.ok() && second.ok());
  auto setWith = [&](const std::string& escalate) {
    auto config = http::parseHttpConfigText(
        "http:\n  policies:\n    - {name: per-ip, key: ip, algorithm: fixed_window, limit: 1, "
        "window_ms: 60000}\n" +
            escalate,
        "test.yaml");
    EXPECT_TRUE(config.ok()) << config.error().message;
    return std::move(*config);
  };
  auto made = http::Limiter::create(
      setWith("  escalate: {rejections: 5, within: 10s, ban: 1m, socket: " + config_.socket +
              "}\n"),
      clock_);
  ASSERT_TRUE(made.ok());
  auto live = std::make_shared<http::LiveLimiter>(std::shared_ptr<http::Limiter>(std::move(*made)),
                                                  "v1", clock_);
  http::LiveReporter reporter(live, clock_);
  EXPECT_TRUE(reporter.active());
  for (int i = 0; i < 5; ++i) reporter.noteRejection("192.0.2.1");
  EXPECT_EQ(first->drain(10).size(), 1u) << "5 rejections under the first set";

  ASSERT_TRUE(live->update(setWith("  escalate: {rejections: 2, within: 10s, ban: 1m, socket: " +
                                   dir_ + "/other.sock}\n"),
                           "v2")
                  .ok());
  for (int i = 0; i < 2; ++i) reporter.noteRejection("192.0.2.2");
  EXPECT_TRUE(first->drain(10).empty());
  EXPECT_EQ(second->drain(10).size(), 1u) << "2 rejections, to the new socket";
  EXPECT_EQ(reporter.reportsSent(), 2u) << "counted across both";

  ASSERT_TRUE(live->update(setWith(""), "v3").ok());
  for (int i = 0; i < 20; ++i) reporter.noteRejection("192.0.2.3");
  EXPECT_FALSE(reporter.active());
  EXPECT_TRUE(first->drain(10).empty());
  EXPECT_TRUE(second->drain(10).empty());
  EXPECT_EQ(reporter.reportsSent(), 2u);
}

}  // namespace
}  // namespace floodgate::daemon
