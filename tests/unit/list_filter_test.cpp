// SPDX-License-Identifier: MIT
// Unit tests of controller/list_filter.h: the filter words and bits an IPv4 prefix covers.
#include "controller/list_filter.h"

#include <gtest/gtest.h>

#include <map>

namespace floodgate {
namespace {

// word → mask for `text`, merged.
std::map<uint32_t, uint64_t> wordsOf(const std::string& text) {
  auto cidr = parseCidr(text);
  EXPECT_TRUE(cidr.ok()) << text;
  std::map<uint32_t, uint64_t> out;
  forEachListFilterWord(*cidr, [&](uint32_t word, uint64_t mask) { out[word] |= mask; });
  return out;
}

TEST(ListFilter, AHostOrA24IsTheOneBitOfItsSlash24) {
  // 10.1.2.0/24 is /24 number 0x0a0102: word 0x0a0102 / 64, bit 0x0a0102 % 64
  const uint32_t n = 0x0a0102;
  std::map<uint32_t, uint64_t> expected{{n / 64, uint64_t{1} << (n % 64)}};
  EXPECT_EQ(wordsOf("10.1.2.3/32"), expected);
  EXPECT_EQ(wordsOf("10.1.2.128/25"), expected);
  EXPECT_EQ(wordsOf("10.1.2.0/24"), expected);
}

TEST(ListFilter, AShorterPrefixSetsEverySlash24ItSpans) {
  // a /22 is four /24s in one word; a /16 is 256 /24s, four whole words
  const uint32_t n = 0x0a0104;
  EXPECT_EQ(wordsOf("10.1.4.0/22"),
            (std::map<uint32_t, uint64_t>{{n / 64, uint64_t{0xf} << (n % 64)}}));
  auto words = wordsOf("10.1.0.0/16");
  ASSERT_EQ(words.size(), 4u);
  for (const auto& [word, mask] : words) {
    EXPECT_EQ(mask, ~uint64_t{0});
    EXPECT_GE(word, 0x0a0100u / 64);
    EXPECT_LT(word, 0x0a0200u / 64);
  }
  EXPECT_EQ(wordsOf("0.0.0.0/0").size(), FG_LIST_FILTER_WORDS);
}

}  // namespace
}  // namespace floodgate
