// SPDX-License-Identifier: MIT
// YamlReader's checks: what each accepts, and the one positioned line it gives for the rest.
#include "floodgate/yaml/yaml_reader.h"

#include <gtest/gtest.h>

#include "floodgate/common/units.h"

namespace floodgate::config {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;
constexpr uint64_t kHour = 3600 * kSecond;

// Reads `value: <text>` with `read`, keeping what it reported.
class Read {
 public:
  explicit Read(const std::string& value) : root_(YAML::Load("value: " + value + "\n")) {}

  YamlEntry entry() const {
    for (const auto& item : root_) return {item.first, item.second};
    return {root_, root_};
  }
  YamlReader& reader() { return reader_; }
  // Every diagnostic, formatted, one per line.
  std::string errors() const { return diagnostics_.format(); }

 private:
  YAML::Node root_;
  Diagnostics diagnostics_;
  YamlReader reader_{"f.yaml", diagnostics_};
};

TEST(YamlReader, IntegerAcceptsDecimalWholeNumbersInRange) {
  Read read("-3");
  EXPECT_EQ(read.reader().integer(read.entry(), "n", -5, 5), -3);
  EXPECT_EQ(read.errors(), "");
}

TEST(YamlReader, IntegerRejectsWhatIsNoDecimalNumberOrOutOfRange) {
  for (const char* bad : {"lots", "1.5", "0x10", "+5", "1e3", "[1]", "{a: 1}"}) {
    Read read(bad);
    EXPECT_EQ(read.reader().integer(read.entry(), "n", 1, 100), std::nullopt) << bad;
    EXPECT_NE(read.errors().find("f.yaml:1:8: n must be a whole number from 1 to 100 (got "),
              std::string::npos)
        << read.errors();
  }
  // Beyond int64: no number rather than a wrapped one.
  Read huge("99999999999999999999999999");
  EXPECT_EQ(huge.reader().integer(huge.entry(), "n", 1, 100), std::nullopt);
  EXPECT_EQ(huge.errors(),
            "f.yaml:1:8: n must be a whole number from 1 to 100 (got "
            "'99999999999999999999999999')\n");
  Read low("0");
  EXPECT_EQ(low.reader().integer(low.entry(), "n", 1, 100), std::nullopt);
  EXPECT_EQ(low.errors(), "f.yaml:1:8: n must be from 1 to 100, got 0\n");
}

TEST(YamlReader, AnEmptyValueIsReportedAtItsKey) {
  Read read("");
  EXPECT_EQ(read.reader().integer(read.entry(), "n", 1, 100), std::nullopt);
  EXPECT_EQ(read.errors(), "f.yaml:1:1: n must be a whole number from 1 to 100 (got nothing)\n");
}

TEST(YamlReader, NumberAcceptsDecimalsAndExponentsInRange) {
  for (auto [text, value] : {std::pair{"1.5", 1.5}, std::pair{"0.001", 0.001},
                             std::pair{"1e3", 1000.0}, std::pair{"7", 7.0}}) {
    Read read(text);
    EXPECT_EQ(read.reader().number(read.entry(), "x", 0.001, 1e9), value) << text;
    EXPECT_EQ(read.errors(), "");
  }
}

TEST(YamlReader, NumberRejectsInfinityNanAndWhatADoubleCannotHold) {
  for (const char* bad : {".inf", "inf", "nan", ".nan", "1e400", "fast", "1.5.2", "[1]"}) {
    Read read(bad);
    EXPECT_EQ(read.reader().number(read.entry(), "x", 0.001, 1e9), std::nullopt) << bad;
    EXPECT_NE(read.errors().find("f.yaml:1:8: x must be a number from 0.001 to 1000000000 (got "),
              std::string::npos)
        << read.errors();
  }
  Read low("-1");
  EXPECT_EQ(low.reader().number(low.entry(), "x", 0.001, 1e9), std::nullopt);
  EXPECT_EQ(low.errors(), "f.yaml:1:8: x must be from 0.001 to 1000000000, got -1\n");
}

TEST(YamlReader, BoundedUnitsSayTheBoundsInTheirUnits) {
  Read ok("30s");
  EXPECT_EQ(
      ok.reader().withUnit(ok.entry(), "d", parseDuration, "10s", kSecond, kHour, formatDuration),
      30 * kSecond);
  EXPECT_EQ(ok.errors(), "");
  Read low("10ms");
  EXPECT_EQ(
      low.reader().withUnit(low.entry(), "d", parseDuration, "10s", kSecond, kHour, formatDuration),
      std::nullopt);
  EXPECT_EQ(low.errors(), "f.yaml:1:8: d must be from 1s to 1h, got 10ms\n");
  Read bad("soon");
  EXPECT_EQ(
      bad.reader().withUnit(bad.entry(), "d", parseDuration, "10s", kSecond, kHour, formatDuration),
      std::nullopt);
  EXPECT_EQ(bad.errors(),
            "f.yaml:1:8: d: 'soon' is not a duration (expected e.g. 500ms, 30s, 10m or 1h)\n");
}

TEST(YamlReader, StringsKeepEachItemAndReportTheOthers) {
  Read read("[a, '', [b], {c: 1}, d]");
  std::vector<YamlString> strings = read.reader().strings(read.entry(), "names", "names", "a name");
  ASSERT_EQ(strings.size(), 2u);
  EXPECT_EQ(strings[0].text, "a");
  EXPECT_EQ(strings[1].text, "d");
  EXPECT_EQ(strings[1].entry.value.Mark().column + 1, 29);
  EXPECT_EQ(read.errors(),
            "f.yaml:1:12: a name must be a non-empty string (got '')\n"
            "f.yaml:1:16: a name must be a non-empty string (got a list)\n"
            "f.yaml:1:21: a name must be a non-empty string (got a mapping)\n");
  Read scalar("a");
  EXPECT_TRUE(scalar.reader().strings(scalar.entry(), "names", "names", "a name").empty());
  EXPECT_EQ(scalar.errors(), "f.yaml:1:8: names must be a list of names (got 'a')\n");
}

TEST(YamlReader, TextRefusesControlCharactersANulAboveAll) {
  // "a\0b" would open `a` (open() stops at the NUL); a newline or escape forges log lines
  for (const char* bad : {"\"a\\0b\"", "\"a\\nb\"", "\"a\\tb\"", "\"a\\eb\"", "\"a\\x7fb\""}) {
    Read read(bad);
    EXPECT_EQ(read.reader().text(read.entry(), "file"), std::nullopt) << bad;
    EXPECT_NE(read.errors().find("f.yaml:1:8: file holds a control character (byte 0x"),
              std::string::npos)
        << read.errors();
  }
  Read nul("\"a\\0b\"");
  nul.reader().text(nul.entry(), "file");
  EXPECT_EQ(nul.errors(),
            "f.yaml:1:8: file holds a control character (byte 0x00 at offset 1): write it "
            "without NULs, newlines, tabs or escapes\n");
  Read fine("\"lists/d\xc3\xa9ny.txt\"");
  EXPECT_EQ(fine.reader().text(fine.entry(), "file"), "lists/d\xc3\xa9ny.txt");
  EXPECT_EQ(fine.errors(), "");
}

TEST(YamlReader, MappingReportsUnknownAndRepeatedKeysAndKeepsTheFirst) {
  Read read("{a: 1, b: 2, a: 3, <<: {b: 4}}");
  std::optional<YamlFields> fields = read.reader().mapping(read.entry(), "m", {"a", "b"});
  ASSERT_TRUE(fields.has_value());
  ASSERT_TRUE(fields->has("a"));
  EXPECT_EQ(fields->find("a")->value.Scalar(), "1");
  EXPECT_EQ(read.errors(),
            "f.yaml:1:21: key 'a' is given twice in m (first at line 1)\n"
            "f.yaml:1:27: unknown key '<<' in m (expected a, b)\n");
}

TEST(YamlReader, AnAliasIsReadAsWhatItNames) {
  YAML::Node root = YAML::Load("a: &n 5\nb: *n\n");
  Diagnostics diagnostics;
  YamlReader reader("f.yaml", diagnostics);
  EXPECT_EQ(reader.integer({root, root["b"]}, "b", 1, 10), 5);
  EXPECT_TRUE(diagnostics.empty());
}

TEST(YamlReader, FieldFindsOneKeyAmongOthersAndReportsARepeat) {
  YAML::Node root = YAML::Load("rules: []\nhttp: {a: 1}\nhttp: {b: 2}\n");
  Diagnostics diagnostics;
  YamlReader reader("f.yaml", diagnostics);
  std::optional<YamlEntry> http = reader.field({root, root}, "", "http");
  ASSERT_TRUE(http.has_value());
  EXPECT_TRUE(http->value["a"]);
  EXPECT_EQ(diagnostics.format(),
            "f.yaml:3:1: key 'http' is given twice at the top level (first at line 2)\n");
  EXPECT_FALSE(reader.field({root, root}, "", "interfaces").has_value());
  EXPECT_FALSE(reader.field({root["rules"], root["rules"]}, "rules", "http").has_value());
}

TEST(Diagnostics, AControlCharacterIsEscapedSoEachStaysOneLine) {
  Diagnostics diagnostics;
  diagnostics.add("f.yaml", 1, 2, "'a\nf.yaml:9:9: forged\x1b[2J\tb' is wrong");
  diagnostics.add({"f.yaml", 3, 4, "plain, \"quoted\" and caf\xc3\xa9"});
  EXPECT_EQ(diagnostics.format(),
            "f.yaml:1:2: 'a\\nf.yaml:9:9: forged\\x1b[2J\\tb' is wrong\n"
            "f.yaml:3:4: plain, \"quoted\" and caf\xc3\xa9\n");
}

TEST(Diagnostics, AFileNameFromOutsideIsEscapedToo) {
  Diagnostics diagnostics;
  diagnostics.add("lists/x\nf.yaml:1:1: ok\x1b[2J", 3, 1, "not a CIDR");
  EXPECT_EQ(diagnostics.format(), "lists/x\\nf.yaml:1:1: ok\\x1b[2J:3:1: not a CIDR\n");
}

TEST(Diagnostics, AHugeQuotedValueIsCutNeverInsideACharacter) {
  Diagnostics diagnostics;
  // 1023 bytes of 'a', then a two-byte character across the 1024-byte cut
  std::string value = std::string(1023, 'a') + "\xc3\xa9" + std::string(1'000'000, 'b');
  diagnostics.add("f.yaml", 1, 2, value);
  const std::string& message = diagnostics.items()[0].message;
  EXPECT_EQ(message, std::string(1023, 'a') + "... (1000002 more bytes)");
}

TEST(Diagnostics, BeyondTheFirstFewHundredProblemsAreCountedNotKept) {
  Diagnostics diagnostics;
  const size_t found = Diagnostics::kMaxKept + 1'000;
  for (size_t i = 0; i < found; ++i)
    diagnostics.add("f.yaml", static_cast<int>(i + 1), 1, "problem " + std::to_string(i));
  EXPECT_EQ(diagnostics.size(), found);
  EXPECT_EQ(diagnostics.items().size(), Diagnostics::kMaxKept);
  EXPECT_EQ(diagnostics.omitted(), 1'000u);
  EXPECT_EQ(diagnostics.items().back().message,
            "problem " + std::to_string(Diagnostics::kMaxKept - 1));
  const std::string text = diagnostics.format();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), Diagnostics::kMaxKept + 1);
  EXPECT_NE(text.find("\n... and 1000 more problems not shown: fix the first 200 and check "
                      "again\n"),
            std::string::npos);
  // copied into another collector, the count goes along
  Diagnostics copy;
  for (const Diagnostic& d : diagnostics.items()) copy.add(d);
  copy.addOmitted(diagnostics.omitted());
  EXPECT_EQ(copy.size(), found);
  EXPECT_EQ(copy.format(), text);
  EXPECT_FALSE(copy.empty());
  Diagnostics only_omitted;
  only_omitted.addOmitted(1);
  EXPECT_FALSE(only_omitted.empty());
}

}  // namespace
}  // namespace floodgate::config
