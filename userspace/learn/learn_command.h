// SPDX-License-Identifier: MIT
// `floodgate learn` as one call: its flags checked, the limiter sampled for the duration,
// the report printed, the proposal written or diffed, and applied when asked.
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>

#include "floodgate/common/result.h"
#include "learn/learner.h"

namespace floodgate::learn {

// The flags as typed; parseLearnFlags checks them.
struct LearnFlags {
  std::string interface;
  std::string duration;  // --for
  std::string percentile = "99.9";
  std::string margin = "1.5";
  size_t max_sources = kDefaultMaxSources;
  bool json = false;
  std::string output;  // a YAML fragment of the proposal
  std::string diff;    // a config to diff the proposal against
  bool apply = false;
  bool force = false;  // --apply past applyRefusal's checks
};

struct LearnRequest {
  std::string interface;
  LearnOptions options;
  bool json = false;
  std::string output;
  std::string diff;
  bool apply = false;
  bool force = false;
};

inline constexpr uint64_t kLongestLearnNs = 3600ULL * 1000000000ULL;
inline constexpr size_t kMostSources = 10000000;

// A usage error, one line, for the first flag out of range: --for not whole seconds from 1s
// to 1h, --percentile not above 0 and at most 100 (three decimals at most), --margin not
// from 1 to 100, --max-sources not from 1 to 10M.
Result<LearnRequest> parseLearnFlags(const LearnFlags& flags);

// The most a proposal may raise a limit for --apply without --force.
inline constexpr uint64_t kMostApplyFactor = 4;
// The most of a run's traffic a proposal may have dropped, replayed, for --apply without
// --force, in thousandths (1%).
inline constexpr uint64_t kMostAppliedDropMilli = 10;

// Why --apply should not set `report`'s proposals without --force, or ok: the run met more
// sources than it could follow (those it followed are the first to come, not the typical
// ones: spoofed sources filling the cap first drive the proposal down), or a proposal raises
// a rule's pps or burst more than kMostApplyFactor times (a few sources flooding during the
// run move a high percentile that far: two of 1800 at 100k pps took a p99.9 from 34 to
// 100000). Lowering is what learning under generous limits is for, so it is not bounded,
// but a proposal that, replayed, would have dropped more than kMostAppliedDropMilli of the
// run's packets is refused: a limit for what is normal drops almost none of it, and the
// sources it would limit are then a share of the traffic (clients behind one NAT, a few
// heavy users) that a percentile of sources leaves out. It is no defence against a run an
// attacker shaped: spoofed sources at a low rate that outnumber the real ones pull the
// percentile down and dilute the share alike. A proposal the replay could not evaluate is
// refused too: its share is not known. One line naming the rule and the fix.
Status applyRefusal(const LearnReport& report);

// Why a run's proposals are neither written (--output) nor applied (--apply), --force or not:
// it was stopped early (Ctrl-C), so it saw less than the time asked for, and an operator who
// stops a run that was to apply limits wants none applied. Ok for a whole run.
Status stoppedRefusal(const LearnReport& report);

// Writes `text` to `path` (--output) by replaceFile (floodgate/common/write_file.h): as root,
// following no link in the path, and whole or not at all. Thread-compatible.
Status writeProposalFile(const std::string& path, const std::string& text);

// Runs `floodgate learn`: root and an attached limiter on an existing interface are
// checked before anything is sampled. Prints to `out`; `stop` ends the sampling early.
Status runLearnCommand(const LearnFlags& flags, std::ostream& out, const std::atomic<bool>* stop);

}  // namespace floodgate::learn
