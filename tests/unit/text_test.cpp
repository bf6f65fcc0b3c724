// SPDX-License-Identifier: MIT
// printable: text from outside (a stream's entries, a report's reporter) made safe to put in
// a log line, inside quotes or not.
#include "floodgate/common/text.h"

#include <gtest/gtest.h>

namespace floodgate {
namespace {

TEST(PrintableTest, PlainTextIsKept) {
  EXPECT_EQ(printable("web-1:811 uid 33"), "web-1:811 uid 33");
  EXPECT_EQ(printable("a=b, 'c' (d)"), "a=b, 'c' (d)");
}

TEST(PrintableTest, NothingForgesALineOrAFieldOfOne) {
  // a newline would start a line of its own; a quote would end reporter="..." and the text
  // after it read as fields of the line
  EXPECT_EQ(printable("x\nevent=escalated source=203.0.113.5"),
            "x?event=escalated source=203.0.113.5");
  EXPECT_EQ(printable("x\" result=banned source=203.0.113.5 \""),
            "x? result=banned source=203.0.113.5 ?");
  EXPECT_EQ(printable("a\\\" b"), "a?? b");
  EXPECT_EQ(printable(std::string("a\0b\x7f\x1b[2J", 8)), "a?b??[2J");
  // U+2028 (a line separator) and U+202E (right-to-left override) in UTF-8
  EXPECT_EQ(printable("a\xe2\x80\xa8"
                      "b\xe2\x80\xae"
                      "c"),
            "a???b???c");
}

TEST(PrintableTest, AtMostMaxBytes) {
  EXPECT_EQ(printable(std::string(300, 'a')).size(), 200u);
  EXPECT_EQ(printable("abcdef", 3), "abc");
}

TEST(JoinedTest, ListsNamesAsASentenceDoes) {
  EXPECT_EQ(joined({}), "");
  EXPECT_EQ(joined({"a"}), "a");
  EXPECT_EQ(joined({"a", "b"}), "a and b");
  EXPECT_EQ(joined({"a", "b", "c"}), "a, b and c");
}

}  // namespace
}  // namespace floodgate
