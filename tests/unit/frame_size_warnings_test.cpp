// SPDX-License-Identifier: MIT
// Unit tests of controller/frame_size_warnings: byte buckets against an interface's MTU.
#include "controller/frame_size_warnings.h"

#include <gtest/gtest.h>

namespace floodgate {
namespace {

AttachOptions withRule(const RuleSpec& rule) {
  AttachOptions options;
  options.interface = "eth0";
  options.rules = {rule};
  return options;
}

TEST(FrameSizeWarnings, ABucketSmallerThanTheLargestFrameIsNamedWithItsFix) {
  RuleSpec rule;
  rule.name = "bytes";
  rule.limit.bits_per_s = 100'000;
  rule.limit.burst_bytes = 1518;
  EXPECT_TRUE(frameSizeWarnings(withRule(rule), 1500).empty()) << "a 1500-byte MTU fits";
  EXPECT_EQ(frameSizeWarnings(withRule(rule), 9000),
            (std::vector<std::string>{
                "rule 'bytes': its bps limit admits 1518 bytes at once, less than the "
                "9018-byte frames eth0 carries (MTU 9000): such a frame never passes, and "
                "under on_exceed: ban it bans its sender; raise its burst_bytes to at least "
                "9018"}));
  rule.limit.burst_bytes = 9018;
  EXPECT_TRUE(frameSizeWarnings(withRule(rule), 9000).empty());
}

TEST(FrameSizeWarnings, WindowsAndUntrackedBucketsAreCheckedAndPacketLimitsAreNot) {
  RuleSpec rule;
  rule.name = "win";
  rule.algorithm = Algorithm::kFixedWindow;
  rule.window_ns = 100'000'000;        // 100 ms
  rule.limit.bits_per_s = 400'000;     // 5000 bytes a window
  rule.untracked.bits_per_s = 80'000;  // 1000 bytes a window
  rule.untracked.pps = 10;
  const auto warnings = frameSizeWarnings(withRule(rule), 9000);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0].rfind("rule 'win': its bps limit admits 5000 bytes at once", 0), 0u);
  EXPECT_NE(warnings[0].find("raise its bps or its window"), std::string::npos);
  EXPECT_EQ(warnings[1].rfind("rule 'win' untracked: its bps limit admits 1000 bytes", 0), 0u);
  RuleSpec packets;
  packets.limit.pps = 1;
  packets.limit.burst = 1;
  EXPECT_TRUE(frameSizeWarnings(withRule(packets), 65535).empty());
}

TEST(FrameSizeWarnings, TheLoopbacksMtuIsRead) {
  const std::optional<uint64_t> mtu = interfaceMtu("lo");
  ASSERT_TRUE(mtu.has_value());
  EXPECT_GE(*mtu, 1280u);
  EXPECT_FALSE(interfaceMtu("fg-no-such-if").has_value());
}

}  // namespace
}  // namespace floodgate
