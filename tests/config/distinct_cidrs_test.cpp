// SPDX-License-Identifier: MIT
// DistinctCidrs: each prefix once, in first-seen order, across the growth of its index.
#include "config/distinct_cidrs.h"

#include <gtest/gtest.h>

namespace floodgate::config {
namespace {

Cidr cidr(const std::string& text) {
  Result<Cidr> parsed = parseCidr(text);
  EXPECT_TRUE(parsed) << text;
  return parsed ? *parsed : Cidr{};
}

// What tells prefixes apart is family, address and length: 10.0.0.0/24 and /25 are two
// entries, and the IPv6 prefix of the same sixteen bytes is another.
TEST(DistinctCidrs, KeepsEachPrefixOnceInFirstSeenOrder) {
  DistinctCidrs list;
  EXPECT_TRUE(list.add(cidr("10.0.0.0/24")));
  EXPECT_TRUE(list.add(cidr("10.0.0.0/25")));
  EXPECT_TRUE(list.add(cidr("a00::/24")));
  EXPECT_FALSE(list.add(cidr("10.0.0.0/24")));
  EXPECT_TRUE(list.add(cidr("192.0.2.1")));
  EXPECT_FALSE(list.add(cidr("10.0.0.0/25")));
  std::vector<Cidr> out = list.take();
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].toString(), "10.0.0.0/24");
  EXPECT_EQ(out[1].toString(), "10.0.0.0/25");
  EXPECT_EQ(out[2].toString(), "a00::/24");
  EXPECT_EQ(out[3].toString(), "192.0.2.1");
  EXPECT_EQ(list.size(), 0u) << "taken: the list starts over";
  EXPECT_TRUE(list.add(cidr("10.0.0.0/24")));
}

// Across many growths of the index, every prefix is found again and none is lost.
TEST(DistinctCidrs, FindsEveryPrefixAgainAfterGrowing) {
  DistinctCidrs list;
  auto host = [](uint32_t i) {
    Cidr c;
    c.addr[0] = 10;
    c.addr[1] = static_cast<uint8_t>(i >> 16);
    c.addr[2] = static_cast<uint8_t>(i >> 8);
    c.addr[3] = static_cast<uint8_t>(i);
    return c;
  };
  for (uint32_t i = 0; i < 100000; ++i) ASSERT_TRUE(list.add(host(i))) << i;
  for (uint32_t i = 0; i < 100000; ++i) ASSERT_FALSE(list.add(host(i))) << i;
  ASSERT_EQ(list.size(), 100000u);
  for (uint32_t i = 0; i < 100000; i += 9973) EXPECT_EQ(list[i], host(i));
}

}  // namespace
}  // namespace floodgate::config
