/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Per-CPU packet and byte counters by verdict and reason, and per rule. */
#ifndef FLOODGATE_COUNTERS_BPF_H
#define FLOODGATE_COUNTERS_BPF_H

#include "maps.bpf.h"

static __always_inline void fg_count_into(void *map, __u32 index, __u32 len)
{
	struct fg_counter *counter = bpf_map_lookup_elem(map, &index);

	/* per-CPU values: no other CPU writes this one */
	if (counter) {
		counter->packets++;
		counter->bytes += len;
	}
}

static __always_inline void fg_count(__u32 verdict, __u32 reason, __u32 len)
{
	fg_count_into(&counters, FG_COUNTER_INDEX(verdict, reason), len);
}

static __always_inline void fg_count_rule(__u32 rule_id, __u32 verdict, __u32 len)
{
	fg_count_into(&rule_counters, FG_RULE_COUNTER_INDEX(rule_id, verdict), len);
}

/* Counts one `stat` (enum fg_table_stat) of a rule. */
static __always_inline void fg_count_table(__u32 rule_id, __u32 stat)
{
	__u32 index = FG_TABLE_STAT_INDEX(rule_id, stat);
	__u64 *counter;

	if (stat >= FG_TABLE_STAT_COUNT)
		return;
	counter = bpf_map_lookup_elem(&table_stats, &index);
	if (counter)
		*counter += 1; /* per-CPU */
}

#endif /* FLOODGATE_COUNTERS_BPF_H */
