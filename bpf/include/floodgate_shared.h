/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Every struct, enum and constant that crosses between the XDP program and the controller. */
#ifndef FLOODGATE_SHARED_H
#define FLOODGATE_SHARED_H

#include <linux/types.h>

/* Rules live in two sets of this many slots; the program reads the active one only. */
#define FG_MAX_RULES 32
#define FG_RULE_SETS 2
/* Stable rule ids index per-rule state; ids outlive reloads, so there are more ids than slots. */
#define FG_MAX_RULE_IDS (FG_MAX_RULES * FG_RULE_SETS)
/* Entries of `rules`: every position of every rule set. */
#define FG_RULE_POSITIONS (FG_MAX_RULES * FG_RULE_SETS)
#define FG_MAX_PORT_RANGES 8
#define FG_RULE_NAME_LEN 32

/* Bucket table: a fixed ARRAY of slots grouped in sets of this many ways. Its size is a
 * power of two (the program masks a hash to find a set) from FG_TABLE_WAYS to the largest
 * the controller sizes: 64M slots, 4 GiB of struct fg_slot. */
#define FG_TABLE_WAYS 4
#define FG_DEFAULT_TABLE_SLOTS 262144
/* A set's index: an element of `sets` per set of the table (struct fg_set), and at least
 * this many, whose memory entries a small table's sources share. */
#define FG_MIN_SET_ELEMENTS 32768
/* Entries of the memory of returning sources in each element of `sets`. */
#define FG_MEMORY_WAYS 3
/* The longest a rule's `remember_for` may be: an entry fresh for longer than this is one
 * whose stamp wrapped around, as stale as can be. */
#define FG_MAX_REMEMBER_SECONDS 86400
#define FG_LARGEST_TABLE_SLOTS (1U << 26)
/* Entries of each allow and deny trie by default, and at most: tries this large take
 * about a gigabyte of kernel memory, so a larger size is a typo. */
#define FG_LIST_MAX_ENTRIES 262144
#define FG_LARGEST_LIST_ENTRIES (1U << 24)

/* Bucket times are nanoseconds scaled by 2^FG_TIME_SHIFT, so a byte at 100 Gbit/s
 * (0.08 ns) still costs 5243 units: rate error below 1e-4 at any supported rate. */
#define FG_TIME_SHIFT 16
/* A reading this much older than a bucket's newest update is still trusted as "late";
 * beyond it the bucket time is taken to have wrapped (idle for ~3.26 days), i.e. full. */
#define FG_STALE_MAX_NS 1000000000ULL
/* The longest a bucket may take to refill from empty (burst / rate), validated on load. */
#define FG_MAX_CAPACITY_NS 3600000000000ULL

enum fg_verdict {
	FG_VERDICT_PASS = 0,
	FG_VERDICT_DROP = 1,
	FG_VERDICT_MONITOR = 2,
	FG_VERDICT_COUNT = 3,
};

enum fg_reason {
	FG_REASON_RATE = 0,
	FG_REASON_DENY = 1,
	FG_REASON_BAN = 2,
	FG_REASON_ALLOW = 3,
	FG_REASON_MALFORMED = 4,
	FG_REASON_FRAGMENT = 5,
	FG_REASON_NON_IP = 6,
	FG_REASON_DEFAULT = 7,
	/* NDP and MLD from this link, which meet no rule (bpf/parse.bpf.h) */
	FG_REASON_LINK_CONTROL = 8,
	FG_REASON_COUNT = 9,
};

/* Index of the per-CPU counter for a (verdict, reason) pair. */
#define FG_COUNTER_INDEX(verdict, reason) ((verdict)*FG_REASON_COUNT + (reason))
#define FG_COUNTER_SLOTS (FG_VERDICT_COUNT * FG_REASON_COUNT)

struct fg_counter {
	__u64 packets;
	__u64 bytes;
};

/* What to do with a frame the parser cannot vouch for. */
enum fg_policy {
	FG_POLICY_PASS = 0,
	FG_POLICY_DROP = 1,
};

struct fg_limit {
	__u64 interval; /* bucket time units one unit of cost takes to refill; 0 = no limit */
	__u64 capacity; /* burst × interval: how far a bucket time may run ahead of now */
};

/* Run-time settings, the single entry of the `settings` map. */
struct fg_settings {
	__u32 malformed_policy;	  /* enum fg_policy: truncated or bogus headers */
	__u32 fragment_policy;	  /* enum fg_policy: non-first fragments (no L4 header) */
	__u32 unknown_ext_policy; /* enum fg_policy: IPv6 extension chains the parser gives up on */
	__u32 monitor;		  /* 1: every drop is counted as monitor and passed */
	__u32 allow_entries[2]; /* [0] IPv4, [1] IPv6: lookups are skipped while a list is empty */
	__u32 deny_entries[2];
	__u32 ban_entries[2]; /* kept by the program too, with atomic adds */
	__u32 list_filters;   /* bit per enum fg_list whose IPv4 filter is built (until then the
			       * program asks the trie for every source) */
	__u32 table_layout;   /* FG_TABLE_LAYOUT of the floodgate that made the bucket table
			       * (0: one from before the field) */
	__u64 hash_seed;      /* keys the slot hash; chosen at first attach, kept on replace */
	/* Neighbour Discovery and MLD from this link pass by no rule while this budget, one
	 * bucket for the interface, admits them (interval 0: always); past it they meet the
	 * rules as any ICMPv6 does, so a neighbour cannot send them without bound */
	struct fg_limit link_control;
	__u64 link_control_state; /* its GCRA bucket time, the program's with compare-and-swap */
};

/* How the bucket table is laid out and where a source's slot is (struct fg_slot, the
 * fingerprint, the sets' index of `sets` a program finds a slot by): a program of another
 * layout would not find the slots of the running one, so `attach --replace` over a table of
 * another layout is refused. Bumped with any of them (2: the tags; 3: the tags and the
 * memory of returning sources together, struct fg_set; 4: the memory's proven mark, which an
 * entry of layout 3 has at random in its tag). */
#define FG_TABLE_LAYOUT 4

enum fg_list {
	FG_LIST_ALLOW = 0,
	FG_LIST_DENY = 1,
};

/* Each IPv4 list has a filter before its trie (`allow_filter_v4`, `deny_filter_v4`: ARRAYs
 * of FG_LIST_FILTER_WORDS __u64, mmapable): bit n % 64 of word n / 64 is set when a prefix
 * of the list overlaps the /24 n (the address >> FG_LIST_FILTER_SHIFT). Most sources are on
 * no list, and one array read tells so where a trie lookup walks a dozen nodes. The
 * controller sets a prefix's bits before it inserts the prefix, and clears bits only by
 * rebuilding the filter from the trie: a stale bit costs a trie lookup, never an answer. */
#define FG_LIST_FILTER_SHIFT 8
#define FG_LIST_FILTER_WORDS (1U << (32 - FG_LIST_FILTER_SHIFT - 6))

enum fg_family {
	FG_FAMILY_V4 = 0,
	FG_FAMILY_V6 = 1,
};

enum fg_key_kind {
	FG_KEY_SOURCE = 0, /* one bucket per source address masked to the rule's prefix */
	FG_KEY_GLOBAL = 1, /* one bucket for everything the rule matches */
};

enum fg_action {
	FG_ACTION_DROP = 0,
	FG_ACTION_MONITOR = 1,
	FG_ACTION_BAN = 2, /* drop, and ban the source for the rule's ban time */
};

/* The two limits a rule may set; each is a GCRA in bucket time units. */
enum fg_limit_kind {
	FG_LIMIT_PPS = 0,
	FG_LIMIT_BPS = 1,
	FG_LIMIT_KINDS = 2,
};

/* fg_rule.untracked_own: which of the untracked bucket's rates are its own. */
#define FG_UNTRACKED_OWN_PPS 1
#define FG_UNTRACKED_OWN_BPS 2

struct fg_port_range {
	__u16 first;
	__u16 last;
};

enum fg_algorithm {
	FG_ALG_TOKEN_BUCKET = 0,   /* GCRA: one arrival time per limit */
	FG_ALG_FIXED_WINDOW = 1,   /* count per window: [window id:24][count:40] */
	FG_ALG_SLIDING_WINDOW = 2, /* two-counter estimate: [window id:24][prev:20][curr:20] */
};

/* Window counters pack the low bits of the window id above the counts. */
#define FG_WINDOW_ID_SHIFT 40
#define FG_WINDOW_ID_MASK 0xffffffULL
#define FG_FIXED_COUNT_MASK ((1ULL << 40) - 1)
#define FG_SLIDING_COUNT_BITS 20
#define FG_SLIDING_COUNT_MAX ((1ULL << FG_SLIDING_COUNT_BITS) - 1)

/* One compiled rule, an entry of the `rules` map at [set * FG_MAX_RULES + position].
 * For the window algorithms a limit's `interval` is 1 and its `capacity` is the most a
 * window admits (packets, or bytes for bps); cost × interval is charged either way. */
struct fg_rule {
	__u32 id;	    /* stable across reloads: keys bucket state and per-rule counters */
	__u32 epoch;	    /* bumped when an id is reused, so old slots of that id never match */
	__u8 protocol;	    /* 0 any, else IPPROTO_TCP / IPPROTO_UDP / IPPROTO_ICMP (also ICMPv6) */
	__u8 key_kind;	    /* enum fg_key_kind */
	__u8 ipv4_prefix;   /* source mask for FG_KEY_SOURCE, 1..32 */
	__u8 ipv6_prefix;   /* 1..128 */
	__u8 action;	    /* enum fg_action */
	__u8 tcp_flags_set; /* TCP flags that must be set (tcp only) */
	__u8 tcp_flags_clear; /* TCP flags that must be clear */
	__u8 port_ranges;     /* 0: any destination port */
	struct fg_port_range ports[FG_MAX_PORT_RANGES];
	__u8 algorithm;	    /* enum fg_algorithm */
	__u8 has_sources;   /* 1: only sources in this rule's set (src_* maps, bit `id`) match */
	__u8 untracked_own; /* FG_UNTRACKED_OWN_*: the rates of `untracked` set apart from `limits`
			     * (each other one follows the rule's own) */
	__u8 syn_cookies;   /* enum fg_syn_cookies (a source rule that matches TCP SYNs) */
	__u32 window_ms;    /* window algorithms */
	__u64 ban_ticks;    /* FG_ACTION_BAN: how long a ban lasts, jiffies (rounded up) */
	struct fg_limit limits[FG_LIMIT_KINDS];
	/* FG_KEY_SOURCE: the shared bucket of every source without a slot of its own */
	struct fg_limit untracked[FG_LIMIT_KINDS];
	/* FG_KEY_SOURCE: a GCRA on new sources taking a slot; beyond it they are untracked */
	struct fg_limit new_sources;
	char name[FG_RULE_NAME_LEN]; /* for the controller's reports; the program ignores it */
	/* FG_KEY_SOURCE with syn_cookies: a GCRA on sources that answered a SYN cookie taking
	 * a slot, apart from new_sources (which a spoofed flood keeps refusing) */
	struct fg_limit verified_sources;
	/* FG_KEY_SOURCE: a GCRA on remembered sources (fg_slot_query, `returning`) taking a
	 * slot ahead of the new-source cap; interval 0 with remember_ticks set: no cap */
	struct fg_limit returning_sources;
	__u32 remember_ticks;	 /* how long a source stays remembered, jiffies; 0: none is */
	__u8 remember_connected; /* 1: only a source whose packet belongs to a TCP connection
				  * this host has established is remembered (bpf/connected.bpf.h) */
	__u8 pad_returning[3];
};

/* When a rule answers a SYN from a source without a slot with a SYN cookie (a SYN-ACK sent
 * from the NIC, nothing stored) instead of charging it to the new-source cap. */
enum fg_syn_cookies {
	FG_SYN_COOKIES_OFF = 0,
	FG_SYN_COOKIES_ALWAYS = 1,
	/* while the rule's new-source cap or untracked bucket refused in the past second */
	FG_SYN_COOKIES_AUTO = 2,
};

/* Which rule set the program reads and how many rules it holds: the `active` map's single
 * entry, written last by a reload so the program never sees a half-written set. The map is
 * mmapable so the controller flips it with one atomic 8-byte store. */
struct fg_active {
	__u32 set;
	__u16 rule_count;
	__u16 has_sources; /* some rule of the set has a source set: look the source up once */
};

/* The classes of packet the rule index sorts rules by: a rule for one protocol can only
 * match packets of that protocol's class, a rule for any protocol matches every class. */
enum fg_packet_class {
	FG_CLASS_TCP = 0,
	FG_CLASS_UDP = 1,
	FG_CLASS_ICMP = 2,  /* ICMP and ICMPv6 */
	FG_CLASS_OTHER = 3, /* any other protocol, or none known */
	FG_CLASS_ANY = 4,   /* a later IPv6 fragment: the protocol it claims binds no rule */
	FG_PACKET_CLASSES = 5,
};

/* Per rule set (`rule_index` ARRAY, FG_RULE_SETS entries, written with the set before the
 * flip): bit i of rules[class] is set when the rule at position i can match a packet of
 * that class, so a packet visits only the rules it can match, not every rule of the set. */
struct fg_rule_index {
	__u32 rules[FG_PACKET_CLASSES];
	__u32 syn_cookie_rules; /* bit i: the rule at position i has syn_cookies on */
	/* bit i: the rule at position i keys by source (FG_KEY_SOURCE): its slots and bans
	 * are for a source that is who it says, which a SYN answered with a cookie is not yet */
	__u32 source_rules;
};

/* An element of `sets`: a set's index, 32 bytes, so a source's look at both halves is one
 * cache line. The element of set n is the set's own, and for a table of fewer sets than
 * FG_MIN_SET_ELEMENTS the memory entries of the elements past its sets are used too. */
struct fg_set {
	/* the set's four ways' 16-bit tags (the top bits of their owners' fingerprints), way
	 * 0 first in memory: a lookup reads a slot only where the tag matches */
	__u64 tags;
	/* the memory of returning sources (bpf/returning.bpf.h): FG_MEMORY_PROVEN and 31 bits
	 * of a source's fingerprint as a tag over the tick until which it is fresh, 0 an empty
	 * entry */
	__u64 memory[FG_MEMORY_WAYS];
};

/* One slot of the bucket table (`buckets` ARRAY, mmapable so `top` reads it in place).
 * A source owns a slot while its fingerprint is there; a new source may take a slot only
 * when it is idle (every bucket full, every window over), and an idle bucket is a full one,
 * so taking it loses nothing. One cache line. */
struct fg_slot {
	__u64 fingerprint; /* keyed hash of (rule id, epoch, family, masked source); 0 = unused */
	__u64 state[FG_LIMIT_KINDS]; /* per limit: arrival time (GCRA) or packed window counter */
	__u8 addr[16];	 /* the masked source, for status and top (IPv4 in the first 4 bytes) */
	__u32 window_ms; /* the owner's window, so any CPU can tell when its counters are idle */
	__u8 rule_id;
	__u8 family; /* enum fg_family */
	__u8 prefix;
	__u8 algorithm; /* enum fg_algorithm of the owner */
	/* Since the owner took the slot, for `top` (they wrap; readers take differences).
	 * Plain increments: two CPUs charging the same source at the same instant may count
	 * one packet for two, so these may run a little below the truth, never above. */
	__u32 packets;	 /* packets charged to it */
	__u32 drops;	 /* of them refused */
	__u32 last_seen; /* jiffies (low 32 bits) of its latest packet: a new source takes the
			  * idle way seen longest ago, so recurring sources keep their slots */
	__u32 last_drop; /* jiffies of its latest refusal, 0 never; a refusal more than a
			  * second after the previous one starts a "limited" event */
};

/* Per rule id (`rule_state` ARRAY, FG_MAX_RULE_IDS entries): the bucket of a global rule,
 * and for a source rule the shared bucket of untracked sources (no slot of their own) and
 * the cap on new sources taking a slot. */
struct fg_rule_state {
	__u64 global_state[FG_LIMIT_KINDS];
	__u64 overflow_state[FG_LIMIT_KINDS];
	__u64 new_source_state;	   /* GCRA time of the new-source cap */
	__u32 last_untracked_drop; /* jiffies, for the events (as fg_slot.last_drop) */
	__u32 last_capped;	   /* jiffies the new-source cap last refused a source */
	__u64 verified_state;	   /* GCRA time of the verified-source cap */
	__u64 returning_state;	   /* GCRA time of the returning-source reserve */
	/* the untracked bucket (same limit) of sources a valid cookie verified that got no
	 * slot: a flood of made-up cookies, charged to overflow_state, cannot starve them */
	__u64 verified_overflow_state[FG_LIMIT_KINDS];
};

/* What became of the sources a source rule saw without a slot of their own, per rule id
 * and CPU (`table_stats`, FG_MAX_RULE_IDS * FG_TABLE_STAT_COUNT __u64 counters). */
enum fg_table_stat {
	FG_TABLE_NEW_SOURCE = 0,      /* took an idle slot */
	FG_TABLE_CAPPED = 1,	      /* the new-source cap refused it (looked at first) */
	FG_TABLE_FULL = 2,	      /* the cap had room; every way of its set is still limited */
	FG_TABLE_UNTRACKED_PASS = 3,  /* packets the shared untracked bucket admitted */
	FG_TABLE_UNTRACKED_DROP = 4,  /* and refused */
	FG_TABLE_BAN_FAILED = 5,      /* a ban the rule would have started found the table full */
	FG_TABLE_COOKIE_SENT = 6,     /* SYNs answered with a SYN cookie */
	FG_TABLE_COOKIE_VERIFIED = 7, /* ACKs whose cookie was valid: their source is verified */
	FG_TABLE_COOKIE_FAILED = 8,   /* ACKs to a listener, with no connection, and a bad cookie */
	FG_TABLE_VERIFIED_SLOT = 9,   /* verified sources that took a slot (the verified cap) */
	FG_TABLE_RETURNING_SLOT = 10, /* remembered sources that took a slot from the reserve */
	FG_TABLE_STAT_COUNT = 11,
};
#define FG_TABLE_STAT_INDEX(rule_id, stat) ((rule_id)*FG_TABLE_STAT_COUNT + (stat))
#define FG_TABLE_STAT_SLOTS (FG_MAX_RULE_IDS * FG_TABLE_STAT_COUNT)

/* Changes of state the program reports through the `events` ring buffer: never one per
 * packet, and at most `event_budget` per CPU per second. */
enum fg_event_type {
	FG_EVENT_LIMITED = 0,		 /* a source started being refused */
	FG_EVENT_BAN_START = 1,		 /* a rule with on_exceed ban banned a source */
	FG_EVENT_BAN_END = 2,		 /* a ban ran out (seen by the program on a packet) */
	FG_EVENT_UNTRACKED_LIMITED = 3,	 /* a rule's shared untracked bucket started refusing */
	FG_EVENT_NEW_SOURCES_CAPPED = 4, /* a rule's new-source cap started refusing */
	FG_EVENT_TYPES = 5,
};

struct fg_event {
	__u64 jiffies;
	__u32 type;    /* enum fg_event_type */
	__u32 rule_id; /* FG_BAN_MANUAL for the end of a manual ban */
	__u8 family;   /* enum fg_family; the address is empty for the per-rule events */
	__u8 prefix;
	__u8 pad[6];
	__u8 addr[16];
};

/* Per CPU (`event_stats`, one entry): the event budget's window and what became of events. */
struct fg_event_stats {
	__u64 window; /* jiffies / ticks per second of the current budget window */
	__u64 used;   /* events emitted in that window */
	__u64 emitted;
	__u64 suppressed; /* over the budget */
	__u64 lost;	  /* the ring buffer was full (nobody reading) */
};

/* Value of the ban tries (`bans_v4`, `bans_v6`): a banned prefix and when its ban ends.
 * Times are 64-bit jiffies, which never wrap: a ban ends when it should however long its
 * source stays silent (bucket time units wrap every 2^48 ns, about 3 days). */
struct fg_ban {
	__u64 expires; /* the jiffy it ends at: banned while jiffies < expires; 0: until removed */
	__u64 since;   /* the jiffy it started at */
	__u32 prefixlen; /* the key's own prefix, so the program can delete an expired entry */
	__u32 rule_id;	 /* the rule that banned it, or FG_BAN_MANUAL / _ESCALATION / _FLEET */
};
/* Entries of each ban trie. Rule bans stop FG_BAN_RESERVE short of it: a spoofed flood
 * tripping a banning rule with random sources can never crowd out a manual ban or an HTTP
 * escalation, which may use the whole table. */
#define FG_BAN_MAX_ENTRIES FG_LIST_MAX_ENTRIES
#define FG_BAN_RESERVE 16384
/* Rule ids of bans no rule started (above every real id, FG_MAX_RULE_IDS): an operator's
 * `ban add`, the daemon's ban of an address the HTTP layer reported, and a ban another host
 * of the fleet published (never published again). */
#define FG_BAN_MANUAL 0xffffffffU
#define FG_BAN_ESCALATION 0xfffffffeU
#define FG_BAN_FLEET 0xfffffffdU

/* Per rule id and verdict, per CPU (`rule_counters`, FG_MAX_RULE_IDS * FG_VERDICT_COUNT). */
#define FG_RULE_COUNTER_INDEX(rule_id, verdict) ((rule_id)*FG_VERDICT_COUNT + (verdict))
#define FG_RULE_COUNTER_SLOTS (FG_MAX_RULE_IDS * FG_VERDICT_COUNT)

/* The one slot of `next_program` (a BPF_MAP_TYPE_PROG_ARRAY): the XDP program that gets
 * what floodgate passes, by a tail call; empty, a pass is XDP_PASS. */
#define FG_NEXT_PROGRAM_SLOT 0
#define FG_NEXT_PROGRAM_SLOTS 1

/* What the XDP program tells the TC ingress program about a frame, in the frame's
 * metadata (before the Ethernet header): its SYN cookie was checked and is valid, and the
 * MSS it encodes. Only BPF programs write metadata, so no sender can forge it. */
#define FG_COOKIE_META_MAGIC 0xf1c0ec1eU
struct fg_cookie_meta {
	__u32 magic;
	__u16 mss;
	__u16 pad;
};

/* Keys of the allow and deny LPM tries. */
struct fg_lpm_v4 {
	__u32 prefixlen;
	__u8 addr[4];
};

struct fg_lpm_v6 {
	__u32 prefixlen;
	__u8 addr[16];
};

#endif /* FLOODGATE_SHARED_H */
