// SPDX-License-Identifier: MIT
// Offender reports through a Redis stream: the secret file's checks, the signature, and
// what a forged, tampered or replayed entry comes out as.
#include "floodgate/fleet/report_stream.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace floodgate::http {
namespace {

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
constexpr const char* kLine = "offender 198.51.100.7 rejections=50 within_ms=10000";
constexpr int64_t kNowMs = 1'800'000'000'000;

class ReportSecretFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fg-secret-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    path_ = std::string(dir) + "/reports.key";
  }
  void TearDown() override {
    std::filesystem::remove_all(std::filesystem::path(path_).parent_path());
  }
  void write(const std::string& text, mode_t mode) {
    std::ofstream(path_) << text;
    ASSERT_EQ(chmod(path_.c_str(), mode), 0);
  }
  std::string path_;
};

TEST_F(ReportSecretFile, IsReadTrimmedWhenPrivateAndLongEnough) {
  write(std::string(kSecret) + "\n", 0600);
  auto secret = loadReportSecret(path_);
  ASSERT_TRUE(secret.ok()) << secret.error().message;
  EXPECT_EQ(*secret, kSecret);
  write(kSecret, 0640);  // a group of services may share it
  EXPECT_TRUE(loadReportSecret(path_).ok());
}

TEST_F(ReportSecretFile, MissingShortOrWorldReadableIsRefusedWithHowToFixIt) {
  auto missing = loadReportSecret(path_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("does not exist"), std::string::npos);
  EXPECT_NE(missing.error().message.find("head -c 32 /dev/urandom"), std::string::npos);
  write("short\n", 0600);
  auto short_one = loadReportSecret(path_);
  ASSERT_FALSE(short_one.ok());
  EXPECT_NE(short_one.error().message.find("holds 5 characters; a secret needs at least 16"),
            std::string::npos)
      << short_one.error().message;
  write(kSecret, 0644);
  auto open = loadReportSecret(path_);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("readable by every user"), std::string::npos);
  write(kSecret, 0660);
  auto writable = loadReportSecret(path_);
  ASSERT_FALSE(writable.ok());
  EXPECT_NE(writable.error().message.find("writable by others than its owner"), std::string::npos)
      << writable.error().message;
  std::filesystem::remove(path_);
  ASSERT_EQ(mkfifo(path_.c_str(), 0600), 0);  // a pipe must not hang the reader
  auto pipe = loadReportSecret(path_);
  ASSERT_FALSE(pipe.ok());
  EXPECT_NE(pipe.error().message.find("is not a regular file"), std::string::npos)
      << pipe.error().message;
}

// The entry as XREAD would return its fields.
redis::Reply fieldsOf(const redis::Command& xadd) {
  redis::Reply fields;
  fields.type = redis::Reply::Type::kArray;
  // XADD stream MAXLEN ~ N * field value ...
  for (size_t i = 6; i < xadd.size(); ++i) {
    redis::Reply r;
    r.type = redis::Reply::Type::kString;
    r.str = xadd[i];
    fields.elements.push_back(r);
  }
  return fields;
}

TEST(ReportStream, ASignedReportSurvivesTheRoundTripThroughItsFields) {
  StreamReport signed_report = signStreamReport(kSecret, kLine, "web-3:812", kNowMs);
  redis::Command xadd = streamAddCommand("fg:reports", signed_report);
  EXPECT_EQ(xadd[0], "XADD");
  EXPECT_EQ(xadd[1], "fg:reports");
  EXPECT_EQ(xadd[2], "MAXLEN");
  EXPECT_EQ(xadd[5], "*");
  auto read = streamReportFromFields(fieldsOf(xadd));
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->line, kLine);
  EXPECT_EQ(read->reporter, "web-3:812");
  EXPECT_EQ(read->time_ms, kNowMs);
  EXPECT_EQ(read->mac.size(), 64u);  // hex of HMAC-SHA256
  EXPECT_TRUE(checkStreamReport(kSecret, *read, kNowMs + 5, 60'000).ok());
}

TEST(ReportStream, AnotherSecretATamperedFieldOrAStaleOrFutureTimeIsRefused) {
  constexpr int64_t kBanMs = 600'000;
  StreamReport report = signStreamReport(kSecret, kLine, "web-3:812", kNowMs);
  auto wrong_secret = checkStreamReport("another secret of the same size!", report, kNowMs, kBanMs);
  ASSERT_FALSE(wrong_secret.ok());
  EXPECT_NE(wrong_secret.error().message.find("signature does not match"), std::string::npos);
  EXPECT_NE(wrong_secret.error().message.find("same secret_file"), std::string::npos);

  StreamReport tampered = report;
  tampered.line = "offender 203.0.113.9 rejections=50 within_ms=10000";
  EXPECT_FALSE(checkStreamReport(kSecret, tampered, kNowMs, kBanMs).ok());
  StreamReport later = report;
  later.time_ms += 1;  // the time is signed too
  EXPECT_FALSE(checkStreamReport(kSecret, later, kNowMs, kBanMs).ok());
  StreamReport unsigned_report = report;
  unsigned_report.mac.clear();
  EXPECT_FALSE(checkStreamReport(kSecret, unsigned_report, kNowMs, kBanMs).ok());

  // read back a ban time (plus the allowed skew) later, it still counts; later still, not
  EXPECT_TRUE(
      checkStreamReport(kSecret, report, kNowMs + kBanMs + kReportClockSkewMs, kBanMs).ok());
  auto stale = checkStreamReport(kSecret, report, kNowMs + kBanMs + kReportClockSkewMs + 1, kBanMs);
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.error().message.find("longer than the ban it asks for"), std::string::npos);
  // signed further ahead of Redis's clock than the skew allows
  auto ahead = checkStreamReport(kSecret, report, kNowMs - kReportClockSkewMs - 1, kBanMs);
  ASSERT_FALSE(ahead.ok());
  EXPECT_NE(ahead.error().message.find("ahead of Redis's clock"), std::string::npos);
}

// Read before the signature is checked: a time near the ends of int64 would overflow the
// time checks of the readers (undefined, and an abort under the sanitizers).
TEST(ReportStream, AnEntryWhoseTimeNoHostSignsIsRefusedBeforeAnyArithmetic) {
  StreamReport report = signStreamReport(kSecret, kLine, "web-3:812", kNowMs);
  for (const std::string& time :
       {std::string("9223372036854775807"), std::string("-9223372036854775808"), std::string("-1"),
        std::to_string(kMaxReportTimeMs + 1)}) {
    redis::Command xadd = streamAddCommand("fg:reports", report);
    xadd[11] = time;  // the value after "time_ms"
    ASSERT_EQ(xadd[10], "time_ms");
    auto read = streamReportFromFields(fieldsOf(xadd));
    ASSERT_FALSE(read.ok()) << time;
    EXPECT_EQ(
        read.error().message,
        "its time_ms " + time + " is no time a host signs (ms since 1970, before the year 3000)");
  }
  report = signStreamReport(kSecret, kLine, "web-3:812", kMaxReportTimeMs);
  EXPECT_TRUE(streamReportFromFields(fieldsOf(streamAddCommand("fg:reports", report))).ok());
}

TEST(ReportStream, AnEntryWithoutTheFieldsSaysWhatItNeeds) {
  redis::Reply fields;
  fields.type = redis::Reply::Type::kArray;
  for (const char* text : {"report", kLine}) {
    redis::Reply r;
    r.type = redis::Reply::Type::kString;
    r.str = text;
    fields.elements.push_back(r);
  }
  auto read = streamReportFromFields(fields);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().message,
            "a report entry needs the fields report, reporter, time_ms and mac");
  fields.elements.pop_back();  // an odd count: not field/value pairs
  EXPECT_FALSE(streamReportFromFields(fields).ok());
}

}  // namespace
}  // namespace floodgate::http
