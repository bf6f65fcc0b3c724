// SPDX-License-Identifier: MIT
// Unit tests of common/units: counts, bit rates, byte sizes and durations as operators write them.
#include "floodgate/common/units.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace floodgate {
namespace {

// The value of a successful parse, or a failure naming the input and the error.
template <class Parse>
void expectParses(Parse parse, const std::string& text, uint64_t expected) {
  auto result = parse(text);
  ASSERT_TRUE(result.ok()) << "'" << text << "': " << result.error().message;
  EXPECT_EQ(*result, expected) << "'" << text << "'";
}

template <class Parse>
void expectUsageError(Parse parse, const std::string& text) {
  auto result = parse(text);
  ASSERT_FALSE(result.ok()) << "'" << text << "' parsed as " << *result;
  EXPECT_EQ(result.error().kind, ErrorKind::kUsage) << "'" << text << "'";
  EXPECT_NE(result.error().message.find("'" + text + "'"), std::string::npos)
      << "the message should quote the input: " << result.error().message;
}

TEST(ParseCount, PlainAndSiSuffixed) {
  expectParses(parseCount, "1", 1);
  expectParses(parseCount, "250", 250);
  expectParses(parseCount, "10k", 10000);
  expectParses(parseCount, "10K", 10000);
  expectParses(parseCount, "1.5M", 1500000);
  expectParses(parseCount, "2G", 2000000000);
  expectParses(parseCount, ".5k", 500);
  expectParses(parseCount, "5.", 5);
  expectParses(parseCount, "007", 7);
  expectParses(parseCount, "10 k", 10000);  // a space between number and unit is fine
}

TEST(ParseCount, DecimalFractionsThatComeOutWhole) {
  // 1.1 and 0.3 have no exact binary form; the product still has to round to the count.
  expectParses(parseCount, "1.1k", 1100);
  expectParses(parseCount, "0.3M", 300000);
  expectParses(parseCount, "2.675k", 2675);
}

TEST(ParseCount, LargestAccepted) {
  expectParses(parseCount, "18000000000000000000", 18000000000000000000ULL);
  expectUsageError(parseCount, "18446744073709551615");  // above the 1.8e19 ceiling
  expectUsageError(parseCount, "100000000000G");
}

TEST(ParseCount, Rejections) {
  for (const char* text : {"", "0", "0k", "-5", "+5", "k", ".", "10x", "10k ", " 10", "1.2.3",
                           "1e3", "10 kk", "ten", "0x10", "10m", "1,000"}) {
    expectUsageError(parseCount, text);
  }
  auto bad = parseCount("10x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "'10x' is not a positive count (expected e.g. 250, 10k or 1.5M)");
}

TEST(ParseCount, FractionsOfOneAreNotWhole) {
  auto half = parseCount("1.5");
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(half.error().message, "'1.5' is not a whole number of units");
  expectUsageError(parseCount, "0.0015k");  // 1.5
  expectUsageError(parseCount, "0.5");      // below 1
}

TEST(ParseCount, AWrittenFractionOfALargeNumberIsNotWholeButDecimalSuffixesAre) {
  expectUsageError(parseCount, "10000000.4");
  expectUsageError(parseCount, "1000000000.001");
  expectUsageError(parseCount, "2000000000000.5");
  expectUsageError(parseBitRate, "2000000000000.5");
  EXPECT_EQ(*parseCount("1.1k"), 1100u);  // 1100.0000000000002 as a double
  EXPECT_EQ(*parseCount("2.3M"), 2300000u);
  expectUsageError(parseBytes, "1.1GiB");  // 1181116006.4 bytes
  EXPECT_EQ(*parseBytes("1.5GiB"), 1610612736u);
  EXPECT_EQ(*parseCount("0.7k"), 700u);
}

// A number beyond a double's range once threw std::out_of_range out of std::stod and aborted
// the CLI; it is a usage error like any other bad count.
TEST(ParseCount, NumbersBeyondADoublesRangeAreUsageErrors) {
  expectUsageError(parseCount, std::string(400, '9'));
  expectUsageError(parseCount, "0." + std::string(400, '0') + "1");
  expectUsageError(parseBitRate, std::string(400, '9') + "Gbit");
  expectUsageError(parseBytes, std::string(400, '9') + "KiB");
  expectUsageError(parseDuration, std::string(400, '9') + "s");
}

TEST(ParseBitRate, SuffixesAreDecimal) {
  expectParses(parseBitRate, "5000", 5000);
  expectParses(parseBitRate, "5000bit", 5000);
  expectParses(parseBitRate, "5000bps", 5000);
  expectParses(parseBitRate, "800kbit", 800000);
  expectParses(parseBitRate, "800Kbps", 800000);
  expectParses(parseBitRate, "100Mbit", 100000000);
  expectParses(parseBitRate, "100Mbps", 100000000);
  expectParses(parseBitRate, "1Gbit", 1000000000);
  expectParses(parseBitRate, "1.5Gbps", 1500000000);
  expectParses(parseBitRate, "100Gbit", 100000000000ULL);
  expectParses(parseBitRate, "1Tbit", 1000000000000ULL);
}

TEST(ParseBitRate, Rejections) {
  for (const char* text : {"fast", "", "0", "0Mbit", "10Mb", "10MiB", "1gbit", "1GBit", "Gbit",
                           "0.5bit", "1.0001kbit"}) {
    expectUsageError(parseBitRate, text);
  }
  auto bad = parseBitRate("fast");
  EXPECT_EQ(bad.error().message, "'fast' is not a bit rate (expected e.g. 100Mbit or 1Gbit)");
}

TEST(ParseBytes, DecimalAndBinarySuffixes) {
  expectParses(parseBytes, "1500", 1500);
  expectParses(parseBytes, "1500B", 1500);
  expectParses(parseBytes, "64k", 64000);
  expectParses(parseBytes, "64K", 64000);
  expectParses(parseBytes, "64KB", 64000);
  expectParses(parseBytes, "64kB", 64000);
  expectParses(parseBytes, "64KiB", 65536);
  expectParses(parseBytes, "1.5KiB", 1536);
  expectParses(parseBytes, "1M", 1000000);
  expectParses(parseBytes, "1MB", 1000000);
  expectParses(parseBytes, "1MiB", 1048576);
  expectParses(parseBytes, "2G", 2000000000);
  expectParses(parseBytes, "1GiB", 1073741824);
}

TEST(ParseBytes, Rejections) {
  for (const char* text : {"", "0", "0.5B", "1.1KiB", "64kiB", "64Kib", "64b", "1TB", "lots"}) {
    expectUsageError(parseBytes, text);
  }
}

TEST(ParseDuration, NeedsAUnit) {
  expectParses(parseDuration, "500ms", 500000000);
  expectParses(parseDuration, "0.5ms", 500000);
  expectParses(parseDuration, "30s", 30000000000ULL);
  expectParses(parseDuration, "1.5s", 1500000000);
  expectParses(parseDuration, "10m", 600000000000ULL);
  expectParses(parseDuration, "2h", 7200000000000ULL);
  expectParses(parseDuration, "1d", 86400000000000ULL);
  for (const char* text : {"30", "", "0s", "1us", "1ns", "1w", "1M", "1H", "s", "-1s"}) {
    expectUsageError(parseDuration, text);
  }
  EXPECT_EQ(parseDuration("30").error().message,
            "'30' is not a duration (expected e.g. 500ms, 30s, 10m or 1h)");
}

TEST(FormatCount, LargestWholeUnit) {
  EXPECT_EQ(formatCount(0), "0");
  EXPECT_EQ(formatCount(1), "1");
  EXPECT_EQ(formatCount(999), "999");
  EXPECT_EQ(formatCount(1000), "1k");
  EXPECT_EQ(formatCount(10000), "10k");
  EXPECT_EQ(formatCount(1500), "1.5k");
  EXPECT_EQ(formatCount(1500000), "1.5M");
  EXPECT_EQ(formatCount(1234567), "1234.567k");
  EXPECT_EQ(formatCount(2000000000), "2G");
  EXPECT_EQ(formatCount(5000000000000ULL), "5000G");  // G is the largest unit
}

TEST(FormatBitRate, LargestWholeUnit) {
  EXPECT_EQ(formatBitRate(800), "800bit");
  EXPECT_EQ(formatBitRate(800000), "800kbit");
  EXPECT_EQ(formatBitRate(100000000), "100Mbit");
  EXPECT_EQ(formatBitRate(1000000000), "1Gbit");
  EXPECT_EQ(formatBitRate(1500000000), "1.5Gbit");
  EXPECT_EQ(formatBitRate(1000000000000ULL), "1Tbit");
  EXPECT_EQ(formatBitRate(2000000000000000ULL), "2000Tbit");
}

TEST(FormatDuration, LargestWholeUnit) {
  EXPECT_EQ(formatDuration(500000000), "500ms");
  EXPECT_EQ(formatDuration(1500000000), "1500ms");
  EXPECT_EQ(formatDuration(30000000000ULL), "30s");
  EXPECT_EQ(formatDuration(90000000000ULL), "90s");
  EXPECT_EQ(formatDuration(600000000000ULL), "10m");
  EXPECT_EQ(formatDuration(7200000000000ULL), "2h");
  EXPECT_EQ(formatDuration(86400000000000ULL), "1d");
  EXPECT_EQ(formatDuration(90000000000000ULL), "25h");
}

TEST(FormatDuration, UnderAMillisecondIsAFraction) {
  EXPECT_EQ(formatDuration(500000), "0.5ms");
  EXPECT_EQ(formatDuration(1500), "0.0015ms");
  EXPECT_EQ(formatDuration(1), "0.000001ms");
  EXPECT_EQ(formatDuration(1234567), "1.234567ms");
  EXPECT_EQ(formatDuration(1000001), "1.000001ms");
}

TEST(FormatAndParse, RoundTrip) {
  for (uint64_t value : {1ULL, 7ULL, 250ULL, 1000ULL, 1500ULL, 10000ULL, 123456ULL, 1234567ULL,
                         1500000ULL, 9999999ULL, 2000000000ULL, 4294967295ULL}) {
    auto parsed = parseCount(formatCount(value));
    ASSERT_TRUE(parsed.ok()) << formatCount(value);
    EXPECT_EQ(*parsed, value) << formatCount(value);
  }
  for (uint64_t value : {1ULL, 800ULL, 1544000ULL, 100000000ULL, 1000000000ULL, 1500000000ULL,
                         2500000000ULL, 9999961853ULL, 100000000000ULL, 1000000000000ULL}) {
    auto parsed = parseBitRate(formatBitRate(value));
    ASSERT_TRUE(parsed.ok()) << formatBitRate(value);
    EXPECT_EQ(*parsed, value) << formatBitRate(value);
  }
  for (uint64_t value :
       {1ULL, 999ULL, 1500ULL, 500000ULL, 1234567ULL, 1000000ULL, 500000000ULL, 1500000000ULL,
        30000000000ULL, 600000000000ULL, 5400000000000ULL, 86400000000000ULL}) {
    auto parsed = parseDuration(formatDuration(value));
    ASSERT_TRUE(parsed.ok()) << formatDuration(value);
    EXPECT_EQ(*parsed, value) << formatDuration(value);
  }
}

}  // namespace
}  // namespace floodgate
