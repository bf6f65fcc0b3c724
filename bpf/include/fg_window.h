/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Fixed-window and sliding-window counters packed in one 64-bit word each, in plain C so
 * the XDP program and the native unit tests share them. Times here are nanoseconds. */
#ifndef FLOODGATE_WINDOW_H
#define FLOODGATE_WINDOW_H

#include "floodgate_shared.h"

#ifndef FG_INLINE
#define FG_INLINE static inline __attribute__((always_inline))
#endif

FG_INLINE __u64 fg_window_id(__u64 now_ns, __u64 window_ns)
{
	return (now_ns / window_ns) & FG_WINDOW_ID_MASK;
}

/* The program's nanoseconds wrap with its unit clock, every 2^(64 - FG_TIME_SHIFT) ns. */
#define FG_WINDOW_CLOCK_PERIOD_NS (1ULL << (64 - FG_TIME_SHIFT))

/* Whether `stored` is the id of the window before the one of absolute number `absolute`
 * (now_ns / window_ns): after the wrap, window 0 follows the period's last (short) window,
 * not the id below it, or a sliding window would forget its previous count there and admit
 * twice its limit. */
FG_INLINE int fg_window_is_prev(__u64 stored, __u64 absolute, __u64 window_ns)
{
	return stored == ((absolute - 1) & FG_WINDOW_ID_MASK) ||
	       (!absolute &&
		stored == (((FG_WINDOW_CLOCK_PERIOD_NS - 1) / window_ns) & FG_WINDOW_ID_MASK));
}

/* Whether a word of `algorithm` limits nobody any more (and the empty word). A fixed
 * window reads the current window's count alone, so a word of an earlier window is idle; a
 * sliding window reads the previous one's too, so only a word older than that is. Holding
 * a fixed window's slot through the next window as well would halve what a spoofed flood
 * pays to keep the table's slots from new sources. */
FG_INLINE int fg_window_idle(__u64 word, __u8 algorithm, __u64 now_ns, __u64 window_ns)
{
	__u64 current = fg_window_id(now_ns, window_ns), stored = word >> FG_WINDOW_ID_SHIFT;
	/* the oldest window whose count still counts: the current one, or the one before */
	__u64 oldest = (current - (algorithm == FG_ALG_SLIDING_WINDOW)) & FG_WINDOW_ID_MASK;

	return word == 0 || (stored != current && stored != oldest);
}

/* Fixed window: admits `cost` if the window holding now_ns stays within `limit`. */
FG_INLINE int fg_fixed_admit(__u64 word, __u64 now_ns, __u64 window_ns, __u64 cost, __u64 limit,
			     __u64 *next)
{
	__u64 current = fg_window_id(now_ns, window_ns);
	__u64 count = (word >> FG_WINDOW_ID_SHIFT) == current ? word & FG_FIXED_COUNT_MASK : 0;

	if (cost > limit || count > limit - cost)
		return 0;
	*next = (current << FG_WINDOW_ID_SHIFT) | (count + cost);
	return 1;
}

/* Sliding window counter, the classic rule: the estimate before a request is the previous
 * window's count weighted by how much of it still overlaps the sliding window, plus the
 * current count, prev x (W - elapsed) / W + curr; `cost` is admitted when
 * estimate + cost - 1 < limit, then counted. Exact in integers: the weighted count is
 * rounded down, which decides the same, since floor(x) < n <=> x < n for a whole n
 * (prev < 2^20 and W < 2^42 ns, so the product fits). The C++ and Lua versions compare the
 * same way (tests/data/algorithms/ holds the vectors all three replay). */
FG_INLINE int fg_sliding_admit(__u64 word, __u64 now_ns, __u64 window_ns, __u64 cost, __u64 limit,
			       __u64 *next)
{
	__u64 absolute = now_ns / window_ns;
	__u64 current = absolute & FG_WINDOW_ID_MASK, stored = word >> FG_WINDOW_ID_SHIFT;
	__u64 prev = (word >> FG_SLIDING_COUNT_BITS) & FG_SLIDING_COUNT_MAX;
	__u64 curr = word & FG_SLIDING_COUNT_MAX;
	__u64 elapsed, estimate;

	if (word == 0) {
		prev = curr = 0;
	} else if (fg_window_is_prev(stored, absolute, window_ns)) {
		prev = curr;
		curr = 0;
	} else if (stored != current) {
		prev = curr = 0;
	}
	elapsed = now_ns - absolute * window_ns;
	estimate = curr + prev * (window_ns - elapsed) / window_ns;
	if (cost > limit || estimate > limit - cost || curr + cost > FG_SLIDING_COUNT_MAX)
		return 0;
	*next = (current << FG_WINDOW_ID_SHIFT) | (prev << FG_SLIDING_COUNT_BITS) | (curr + cost);
	return 1;
}

/* Takes `cost` back from the count of window `charged` (the fg_window_id its charge was made
 * in), when a later rule dropped the packet. 0 when the word holds another window: it moved on
 * since the charge (another CPU's packet began the next one), and the count is the new
 * window's, which the packet never added to; taking from it would admit one more there. A
 * sliding window then keeps the charge in its previous count: an estimate a little high for
 * one window, never more generous. */
FG_INLINE int fg_window_refund(__u64 word, __u64 charged, __u64 cost, __u64 count_mask, __u64 *next)
{
	if ((word >> FG_WINDOW_ID_SHIFT) != charged || (word & count_mask) < cost)
		return 0;
	*next = word - cost;
	return 1;
}

#endif /* FLOODGATE_WINDOW_H */
