// SPDX-License-Identifier: MIT
// compileSourceSets: each prefix entry carries the bits of every rule whose set contains it.
#include "controller/source_sets.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace floodgate {
namespace {

RuleSpec ruleWith(uint32_t id, std::initializer_list<const char*> sources) {
  RuleSpec rule;
  rule.id = id;
  for (const char* text : sources) rule.sources.push_back(*parseCidr(text));
  return rule;
}

std::map<std::string, uint64_t> byText(const std::vector<std::pair<Cidr, uint64_t>>& entries) {
  std::map<std::string, uint64_t> out;
  for (const auto& [cidr, bits] : entries) out[cidr.toString()] = bits;
  return out;
}

TEST(SourceSets, RulesWithoutSourcesAddNothing) {
  EXPECT_TRUE(compileSourceSets({ruleWith(0, {}), ruleWith(1, {})}).empty());
}

TEST(SourceSets, ALongerPrefixInheritsTheRulesOfThePrefixesAroundIt) {
  auto entries = byText(compileSourceSets({
      ruleWith(0, {"10.0.0.0/8"}),
      ruleWith(3, {"10.1.0.0/16", "192.0.2.0/24"}),
      ruleWith(5, {"10.1.2.0/24", "2001:db8::/32"}),
      ruleWith(6, {"2001:db8:1::/48"}),
  }));
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(entries["10.0.0.0/8"], 1u << 0);
  EXPECT_EQ(entries["10.1.0.0/16"], (1u << 0) | (1u << 3));
  EXPECT_EQ(entries["10.1.2.0/24"], (1u << 0) | (1u << 3) | (1u << 5));
  EXPECT_EQ(entries["192.0.2.0/24"], 1u << 3);
  EXPECT_EQ(entries["2001:db8::/32"], 1u << 5);
  EXPECT_EQ(entries["2001:db8:1::/48"], (1u << 5) | (1u << 6));
}

TEST(SourceSets, TheSamePrefixInTwoRulesIsOneEntryWithBothBits) {
  auto entries =
      byText(compileSourceSets({ruleWith(1, {"192.0.2.0/24"}), ruleWith(63, {"192.0.2.0/24"})}));
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries["192.0.2.0/24"], (1ULL << 1) | (1ULL << 63));
}

TEST(SourceSets, IPv4AndIPv6NeverContainEachOther) {
  auto entries = byText(compileSourceSets({ruleWith(0, {"0.0.0.0/0"}), ruleWith(1, {"::/0"}),
                                           ruleWith(2, {"192.0.2.1", "2001:db8::1"})}));
  EXPECT_EQ(entries["192.0.2.1"], (1u << 0) | (1u << 2));
  EXPECT_EQ(entries["2001:db8::1"], (1u << 1) | (1u << 2));
}

// Every entry against a brute force over every prefix of every rule: random prefixes of few
// short addresses, so they nest deep and side by side, in both families.
TEST(SourceSets, EachEntryHoldsTheBitsOfExactlyTheRulesWhosePrefixesContainIt) {
  std::mt19937 random(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<RuleSpec> rules(8);
    for (uint32_t id = 0; id < rules.size(); ++id) {
      rules[id].id = id * 9;  // ids up to 63
      for (int i = 0; i < 40; ++i) {
        Cidr cidr{};
        cidr.family = random() % 2 ? Family::kV6 : Family::kV4;
        const int bits = cidr.family == Family::kV6 ? 128 : 32;
        cidr.prefix = static_cast<uint8_t>(random() % (bits + 1));
        cidr.addr[0] = static_cast<uint8_t>(random() % 2 ? 0x0a : 0x0b);
        cidr.addr[1] = static_cast<uint8_t>(random() % 4);
        cidr.addr[2] = static_cast<uint8_t>(random() % 2);
        maskAddress(cidr.addr, cidr.prefix);
        rules[id].sources.push_back(cidr);
      }
    }
    for (const auto& [entry, bits] : compileSourceSets(rules)) {
      uint64_t expected = 0;
      for (const RuleSpec& rule : rules) {
        for (const Cidr& outer : rule.sources) {
          std::array<uint8_t, 16> addr = entry.addr;
          maskAddress(addr, outer.prefix);
          if (outer.family == entry.family && outer.prefix <= entry.prefix && addr == outer.addr)
            expected |= 1ULL << rule.id;
        }
      }
      EXPECT_EQ(bits, expected) << entry.toString() << " in round " << round;
    }
  }
}

}  // namespace
}  // namespace floodgate
