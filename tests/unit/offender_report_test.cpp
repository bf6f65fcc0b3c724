// SPDX-License-Identifier: MIT
// Unit tests of the offender report's line (floodgate/report/offender_report.h): what a
// service writes is what the controller reads, and a wrong line says what is wrong.
#include "floodgate/report/offender_report.h"

#include <gtest/gtest.h>

#include <string>

namespace floodgate::report {
namespace {

TEST(ReportParsing, AcceptsTheLineAndNamesWhatIsWrong) {
  auto report = parseReport("offender 198.51.100.7 rejections=50 within_ms=10000\n");
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->address.toString(), "198.51.100.7");
  EXPECT_EQ(report->rejections, 50);
  EXPECT_EQ(report->within_ms, 10000);
  EXPECT_TRUE(parseReport("offender 2001:db8::7 rejections=1 within_ms=1").ok());
  auto prefix = parseReport("offender 2001:db8:1:2::/64 rejections=1 within_ms=1");
  ASSERT_TRUE(prefix.ok()) << prefix.error().message;
  EXPECT_EQ(prefix->address.toString(), "2001:db8:1:2::/64");
  EXPECT_FALSE(parseReport("offender 2001:db8:1:2::9/64 rejections=1 within_ms=1").ok());
  EXPECT_NE(parseReport("offender everyone rejections=1 within_ms=1")
                .error()
                .message.find("not an IP address or prefix"),
            std::string::npos);
  EXPECT_FALSE(parseReport("offender 198.51.100.7").ok());
  EXPECT_FALSE(parseReport("ban 198.51.100.7 rejections=1 within_ms=1").ok());
  EXPECT_FALSE(parseReport("offender 198.51.100.7 rejections=x within_ms=1").ok());
  EXPECT_FALSE(parseReport("").ok());
}

// A service on a dual-stack socket sees an IPv4 client as ::ffff:a.b.c.d; the client's
// packets carry the IPv4 address, so that is what the report names, for the ban and the
// guards (a mapped ::ffff:127.0.0.1 must be judged as loopback, not as some IPv6 host).
TEST(ReportParsing, AnIpv4MappedAddressIsTheIpv4One) {
  auto mapped = parseReport("offender ::ffff:198.51.100.7 rejections=50 within_ms=10000");
  ASSERT_TRUE(mapped.ok()) << mapped.error().message;
  EXPECT_EQ(mapped->address.family, Family::kV4);
  EXPECT_EQ(mapped->address.toString(), "198.51.100.7");
  auto prefix = parseReport("offender ::ffff:198.51.100.0/120 rejections=50 within_ms=10000");
  ASSERT_TRUE(prefix.ok()) << prefix.error().message;
  EXPECT_EQ(prefix->address.toString(), "198.51.100.0/24");
  // outside the mapped block an address stays IPv6
  auto v6 = parseReport("offender ::fffe:c633:6407 rejections=50 within_ms=10000");
  ASSERT_TRUE(v6.ok()) << v6.error().message;
  EXPECT_EQ(v6->address.family, Family::kV6);
}

TEST(ReportFormat, WritesTheLineParseReportReads) {
  EXPECT_EQ(formatReport("198.51.100.7", 50, 10000),
            "offender 198.51.100.7 rejections=50 within_ms=10000");
  auto back = parseReport(formatReport("2001:db8:1:2::/64", 5, 1000) + "\n");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->address.toString(), "2001:db8:1:2::/64");
  EXPECT_EQ(back->rejections, 5);
  EXPECT_EQ(back->within_ms, 1000);
}

}  // namespace
}  // namespace floodgate::report
