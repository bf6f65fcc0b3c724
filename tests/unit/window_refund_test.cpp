// SPDX-License-Identifier: MIT
// The window algorithms' refund (bpf/include/fg_window.h), run natively: a charge handed back
// when a later rule drops the packet comes off the window it was made in, never the next.
#include <gtest/gtest.h>

#include <cstdint>

#include "fg_window.h"

namespace {

constexpr uint64_t kWindowNs = 1'000'000'000ULL;

// Two packets on two CPUs at a window's end: the first is counted in window 7, then the
// second begins window 8, then a later rule drops the first and its charge is handed back.
// Window 8's count is the second packet's alone: taking the first one's cost from it would
// let one more in there than the limit.
TEST(WindowRefund, AChargeIsHandedBackToTheWindowItWasMadeInOnly) {
  const uint64_t end_of_7 = 8 * kWindowNs - 1, start_of_8 = 8 * kWindowNs;
  for (bool sliding : {false, true}) {
    SCOPED_TRACE(sliding ? "sliding_window" : "fixed_window");
    const uint64_t mask = sliding ? FG_SLIDING_COUNT_MAX : FG_FIXED_COUNT_MASK;
    auto admit = [&](__u64 word, __u64 now_ns, __u64* next) {
      return sliding ? fg_sliding_admit(word, now_ns, kWindowNs, 1, 10, next)
                     : fg_fixed_admit(word, now_ns, kWindowNs, 1, 10, next);
    };
    __u64 first = 0, second = 0, refunded = 0;
    ASSERT_TRUE(admit(0, end_of_7, &first));
    const uint64_t charged = fg_window_id(end_of_7, kWindowNs);
    // handed back at once: the word is as before the charge
    ASSERT_TRUE(fg_window_refund(first, charged, 1, mask, &refunded));
    EXPECT_EQ(refunded & mask, 0u);
    // handed back after window 8 began: nothing is taken from window 8's count
    ASSERT_TRUE(admit(first, start_of_8, &second));
    EXPECT_EQ(second & mask, 1u);
    EXPECT_FALSE(fg_window_refund(second, charged, 1, mask, &refunded));
    // a refund of window 8's own charge still comes off it
    ASSERT_TRUE(fg_window_refund(second, fg_window_id(start_of_8, kWindowNs), 1, mask, &refunded));
    EXPECT_EQ(refunded & mask, 0u);
  }
}

// Never below nothing: a count smaller than the cost is left as it is.
TEST(WindowRefund, ACountSmallerThanTheCostIsLeftAlone) {
  __u64 word = 0, next = 0;
  ASSERT_TRUE(fg_fixed_admit(0, 5, kWindowNs, 2, 10, &word));
  EXPECT_FALSE(fg_window_refund(word, fg_window_id(5, kWindowNs), 3, FG_FIXED_COUNT_MASK, &next));
  EXPECT_TRUE(fg_window_refund(word, fg_window_id(5, kWindowNs), 2, FG_FIXED_COUNT_MASK, &next));
  EXPECT_EQ(next & FG_FIXED_COUNT_MASK, 0u);
}

}  // namespace
