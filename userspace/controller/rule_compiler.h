// SPDX-License-Identifier: MIT
// Compiles RuleSpecs into the program's struct fg_rule (GCRA intervals and capacities) and
// reads them back for display.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "controller/rule_spec.h"
#include "floodgate/common/result.h"
#include "floodgate_shared.h"

namespace floodgate {

// Default burst when none is given: a tenth of a second of the rate, at least 1 packet,
// and at least one full-size frame of bytes so every frame can pass.
uint64_t defaultBurst(uint64_t pps);
uint64_t defaultBurstBytes(uint64_t bits_per_s);
inline constexpr uint64_t kMinBurstBytes = 1518;  // a full-size Ethernet frame

// Bucket time units (ns << FG_TIME_SHIFT) one packet at `pps` takes, rounded up so the
// limit is never exceeded.
uint64_t packetInterval(uint64_t pps);

// Units one byte takes at `bits_per_s`, rounded up.
uint64_t byteInterval(uint64_t bits_per_s);

// How a token bucket's rate runs. Its interval, rounded up to a whole unit, makes the rate a
// little lower than written: by at most 0.1% up to 524 Gbit/s (and 65 G packets a second), by
// up to one unit in the interval past them (10 Tbit/s 1.1%). A rate of 0 runs as 0.
struct RateAsRun {
  uint64_t shown = 0;  // as describeLimits (`floodgate status`) gives it: within 0.1% of it
  double below = 0;    // how much lower than written, a fraction of it (0 to 1)
};
RateAsRun ppsAsRun(uint64_t pps);
RateAsRun bpsAsRun(uint64_t bits_per_s);
// For a rate that runs more than 0.1% lower than written (pps, or bits a second with `bits`),
// what to tell its author: "10Tbit runs at 9.9Tbit, 1.08% lower: ..."; nothing otherwise.
std::optional<std::string> coarseRateNote(uint64_t written, bool bits);

// Checks the spec (a usage error naming the field otherwise) and compiles it. With the
// program's clock tick (`tick_units`, bucket time units per jiffy), a token bucket is made
// to hold at least one tick of tokens plus one packet (or frame): the clock adds a tick of
// tokens at a time, and a smaller bucket would spill them and cap the rate at burst × HZ.
Result<fg_rule> compileRule(const RuleSpec& spec, uint64_t tick_units = 0);

// The index of a rule set: for each fg_packet_class, the positions in `rules` of the rules
// a packet of that class can match (a rule for any protocol is in every class).
fg_rule_index indexRules(const std::vector<fg_rule>& rules);

// The link-control budget as the program's fg_limit (interval 0: without bound), made to
// hold a tick of tokens as a rule's bucket is; a usage error for a rate or burst it cannot be.
Result<fg_limit> compileLinkControl(const LinkControlBudget& budget, uint64_t tick_units = 0);
// The budget as an operator would state it.
LinkControlBudget describeLinkControl(const fg_limit& limit);

// The rule's limits as an operator would state them (rates rounded to whole units).
LimitSpec describeLimits(const fg_rule& rule);
// The same for another limit pair of the rule (its untracked bucket).
LimitSpec describeLimits(const fg_rule& rule, const fg_limit* limits);
// The rule's cap on new sources a second; 0 when it has none.
uint64_t describeNewSources(const fg_rule& rule);
// The rule's cap on sources a second that take a slot by answering a SYN cookie; 0: none.
uint64_t describeVerifiedSources(const fg_rule& rule);
// Remembered sources a second that may take a slot ahead of the new-source cap; 0 when
// there is no cap (or no source is remembered: remember_ticks 0).
uint64_t describeReturningSources(const fg_rule& rule);

}  // namespace floodgate
