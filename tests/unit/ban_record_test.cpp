// SPDX-License-Identifier: MIT
// Unit tests of the fleet ban and lift records' lines (floodgate/report/ban_record.h): what
// one host writes is what another reads, a record of another version is refused by name,
// neither kind is read as the other, and an offender-report reader refuses both clearly.
#include "floodgate/report/ban_record.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "floodgate/report/offender_report.h"

namespace floodgate::report {
namespace {

BanRecord record(const char* address, int64_t expires_ms, BanKind kind) {
  auto cidr = parseCidr(address);
  EXPECT_TRUE(cidr.ok());
  return {*cidr, expires_ms, kind, "00ff11ee22dd33cc"};
}

TEST(BanRecordFormat, WritesTheVersionedLine) {
  EXPECT_EQ(formatBanRecord(record("198.51.100.7", 1764625200000, BanKind::kManual)),
            "ban v1 198.51.100.7 expires_ms=1764625200000 kind=manual nonce=00ff11ee22dd33cc");
}

TEST(BanRecordFormat, ReadsBackWhatItWrites) {
  for (auto [address, kind] :
       {std::pair{"198.51.100.7", BanKind::kManual}, std::pair{"203.0.113.0/24", BanKind::kRule},
        std::pair{"2001:db8:1:2::/64", BanKind::kEscalation}}) {
    const BanRecord written = record(address, 1764625200123, kind);
    auto read = parseBanRecord(formatBanRecord(written) + "\n");
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(read->address, written.address);
    EXPECT_EQ(read->expires_ms, 1764625200123);
    EXPECT_EQ(read->kind, kind);
    EXPECT_EQ(read->nonce, "00ff11ee22dd33cc");
  }
}

// A record naming an IPv4-mapped address bans (or lifts) the IPv4 address its packets carry,
// which the fleet's guards then judge as IPv4.
TEST(BanRecordParsing, AnIpv4MappedAddressIsTheIpv4One) {
  auto ban = parseBanRecord("ban v1 ::ffff:198.51.100.7 expires_ms=1 kind=manual nonce=ab");
  ASSERT_TRUE(ban.ok()) << ban.error().message;
  EXPECT_EQ(ban->address.family, Family::kV4);
  EXPECT_EQ(ban->address.toString(), "198.51.100.7");
  auto wide = parseBanRecord("ban v1 ::ffff:10.0.0.0/104 expires_ms=1 kind=escalation nonce=ab");
  ASSERT_TRUE(wide.ok()) << wide.error().message;
  EXPECT_EQ(wide->address.toString(), "10.0.0.0/8");
  auto lift = parseLiftRecord("unban v1 ::ffff:198.51.100.7 nonce=ab");
  ASSERT_TRUE(lift.ok()) << lift.error().message;
  EXPECT_EQ(lift->address.toString(), "198.51.100.7");
}

// A rule's ban is of the source the packet path saw: an IPv6 frame from an IPv4-mapped
// address is anyone's to send, and no floodgate publishes its ban; read as the IPv4 address,
// such a record would ban that client. Refused, by name.
TEST(BanRecordParsing, ARulesBanOfAnIpv4MappedAddressIsRefused) {
  auto ban = parseBanRecord("ban v1 ::ffff:198.51.100.7 expires_ms=1 kind=rule nonce=ab");
  ASSERT_FALSE(ban.ok());
  EXPECT_NE(ban.error().message.find("IPv4-mapped"), std::string::npos) << ban.error().message;
  EXPECT_TRUE(parseBanRecord("ban v1 198.51.100.7 expires_ms=1 kind=rule nonce=ab").ok());
  EXPECT_TRUE(parseBanRecord("ban v1 2001:db8::7 expires_ms=1 kind=rule nonce=ab").ok());
}

TEST(BanRecordParsing, AnotherVersionIsRefusedByName) {
  auto future = parseBanRecord("ban v2 198.51.100.7 expires_ms=1 kind=manual nonce=ab extra=1");
  ASSERT_FALSE(future.ok());
  EXPECT_NE(future.error().message.find("version 'v2'"), std::string::npos)
      << future.error().message;
  EXPECT_NE(future.error().message.find("reads v1 only"), std::string::npos);
}

TEST(BanRecordParsing, NamesWhatIsWrong) {
  EXPECT_FALSE(parseBanRecord("").ok());
  EXPECT_FALSE(parseBanRecord("offender 198.51.100.7 rejections=5 within_ms=1").ok());
  EXPECT_FALSE(parseBanRecord("ban v1 198.51.100.7 expires_ms=1 kind=manual").ok());
  EXPECT_NE(parseBanRecord("ban v1 everyone expires_ms=1 kind=manual nonce=ab")
                .error()
                .message.find("not an IP address or prefix"),
            std::string::npos);
  // host bits below the prefix: a typo or a forgery, never a ban of the whole /8
  EXPECT_FALSE(parseBanRecord("ban v1 10.0.0.1/8 expires_ms=1 kind=manual nonce=ab").ok());
  EXPECT_FALSE(parseBanRecord("ban v1 198.51.100.7 expires_ms=-5 kind=manual nonce=ab").ok());
  EXPECT_FALSE(parseBanRecord("ban v1 198.51.100.7 expires_ms=x kind=manual nonce=ab").ok());
  EXPECT_NE(parseBanRecord("ban v1 198.51.100.7 expires_ms=1 kind=everyone nonce=ab")
                .error()
                .message.find("kind 'everyone'"),
            std::string::npos);
  EXPECT_FALSE(parseBanRecord("ban v1 198.51.100.7 expires_ms=1 kind=manual nonce=XYZ").ok());
  EXPECT_FALSE(parseBanRecord("ban v1 198.51.100.7 expires_ms=1 kind=manual nonce=").ok());
  // a control character in a field is shown printable, never as is
  auto hostile = parseBanRecord("ban v1 1.2.3.4\x1b[2J expires_ms=1 kind=manual nonce=ab");
  ASSERT_FALSE(hostile.ok());
  EXPECT_EQ(hostile.error().message.find('\x1b'), std::string::npos);
}

TEST(BanRecordParsing, AReportReaderRefusesABanRecordClearly) {
  auto report = parseReport(formatBanRecord(record("198.51.100.7", 1, BanKind::kManual)));
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message.find("a fleet ban record, not an offender report"),
            std::string::npos)
      << report.error().message;
}

LiftRecord lift(const char* address) {
  auto cidr = parseCidr(address);
  EXPECT_TRUE(cidr.ok());
  return {*cidr, "9d3e71c0a4b2f685"};
}

TEST(LiftRecordFormat, WritesTheVersionedLine) {
  EXPECT_EQ(formatLiftRecord(lift("198.51.100.7")), "unban v1 198.51.100.7 nonce=9d3e71c0a4b2f685");
}

TEST(LiftRecordFormat, ReadsBackWhatItWritesWithTheSamePrefix) {
  for (const char* address : {"198.51.100.7", "203.0.113.0/24", "2001:db8:1:2::/64"}) {
    auto read = parseLiftRecord(formatLiftRecord(lift(address)) + "\n");
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(read->address.toString(), address) << "exactly the prefix written";
    EXPECT_EQ(read->nonce, "9d3e71c0a4b2f685");
    EXPECT_TRUE(isLiftRecord(formatLiftRecord(lift(address))));
  }
}

TEST(LiftRecordParsing, AnotherVersionIsRefusedByName) {
  auto future = parseLiftRecord("unban v2 198.51.100.7 nonce=ab until_ms=5");
  ASSERT_FALSE(future.ok());
  EXPECT_NE(future.error().message.find("a lift record of version 'v2'"), std::string::npos)
      << future.error().message;
  EXPECT_NE(future.error().message.find("reads v1 only"), std::string::npos);
  EXPECT_TRUE(isLiftRecord("unban v2 198.51.100.7 nonce=ab until_ms=5"))
      << "still a lift record, so the lift parser names its version";
}

TEST(LiftRecordParsing, NamesWhatIsWrong) {
  EXPECT_FALSE(parseLiftRecord("").ok());
  EXPECT_FALSE(parseLiftRecord("unban").ok());
  EXPECT_FALSE(parseLiftRecord("unban v1 198.51.100.7").ok()) << "no nonce: a copy is a copy";
  EXPECT_FALSE(parseLiftRecord("unban v1 198.51.100.7 nonce=ab extra=1").ok());
  EXPECT_FALSE(parseLiftRecord("unban v1 198.51.100.7 nonce=XYZ").ok());
  EXPECT_FALSE(parseLiftRecord("unban v1 198.51.100.7 nonce=").ok());
  EXPECT_FALSE(parseLiftRecord("unban v1 198.51.100.7 ab").ok());
  EXPECT_NE(parseLiftRecord("unban v1 everyone nonce=ab")
                .error()
                .message.find("not an IP address or prefix"),
            std::string::npos);
  EXPECT_FALSE(parseLiftRecord("unban v1 10.0.0.1/8 nonce=ab").ok()) << "host bits set";
  auto hostile = parseLiftRecord("unban v1 1.2.3.4\x1b[2J nonce=ab");
  ASSERT_FALSE(hostile.ok());
  EXPECT_EQ(hostile.error().message.find('\x1b'), std::string::npos);
}

TEST(LiftRecordParsing, NeitherKindIsReadAsTheOther) {
  const std::string lift_line = formatLiftRecord(lift("198.51.100.7"));
  const std::string ban_line =
      formatBanRecord(record("198.51.100.7", 1764625200000, BanKind::kManual));
  // what a floodgate without lifts does with a lift: refuses it, never bans
  EXPECT_FALSE(parseBanRecord(lift_line).ok());
  EXPECT_FALSE(parseLiftRecord(ban_line).ok());
  EXPECT_FALSE(isLiftRecord(ban_line));
  EXPECT_FALSE(isLiftRecord("unbanned v1 198.51.100.7 nonce=ab"));
}

TEST(LiftRecordParsing, AReportReaderRefusesALiftRecordClearly) {
  auto report = parseReport(formatLiftRecord(lift("198.51.100.7")));
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message.find("a fleet ban record, not an offender report"),
            std::string::npos)
      << report.error().message;
}

TEST(BanNonce, IsHexAndDiffersEveryTime) {
  std::set<std::string> nonces;
  for (int i = 0; i < 100; ++i) {
    const std::string nonce = banNonce();
    EXPECT_EQ(nonce.size(), 16u);
    EXPECT_EQ(nonce.find_first_not_of("0123456789abcdef"), std::string::npos) << nonce;
    nonces.insert(nonce);
  }
  EXPECT_EQ(nonces.size(), 100u);
}

}  // namespace
}  // namespace floodgate::report
