/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* The program's one clock: the kernel's jiffies, or, in a test run, a clock the test sets. */
#ifndef FLOODGATE_CLOCK_BPF_H
#define FLOODGATE_CLOCK_BPF_H

#include <linux/bpf.h>
/* after linux/bpf.h, whose types it uses */
#include <bpf/bpf_helpers.h>

/* Set at load, by tests only: the clock is test_jiffies instead of the kernel's. The
 * verifier knows this read-only value, so in the production program it prunes the test
 * branch and the clock read costs what bpf_jiffies64 alone does. */
const volatile __u8 clock_is_test = 0;

/* The test's clock (.bss, which the test writes through the skeleton's mapping): it
 * moves only when the test moves it, so no window edge falls between two runs. */
__u64 test_jiffies = 0;

static __always_inline __u64 fg_jiffies(void)
{
	if (clock_is_test)
		return *(volatile __u64 *)&test_jiffies;
	return bpf_jiffies64();
}

#endif /* FLOODGATE_CLOCK_BPF_H */
