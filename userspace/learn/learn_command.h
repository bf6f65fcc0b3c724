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
};

struct LearnRequest {
  std::string interface;
  LearnOptions options;
  bool json = false;
  std::string output;
  std::string diff;
  bool apply = false;
};

inline constexpr uint64_t kLongestLearnNs = 3600ULL * 1000000000ULL;
inline constexpr size_t kMostSources = 10000000;

// A usage error, one line, for the first flag out of range: --for not whole seconds from 1s
// to 1h, --percentile not above 0 and at most 100 (three decimals at most), --margin not
// from 1 to 100, --max-sources not from 1 to 10M.
Result<LearnRequest> parseLearnFlags(const LearnFlags& flags);

// Runs `floodgate learn`: root and an attached limiter on an existing interface are
// checked before anything is sampled. Prints to `out`; `stop` ends the sampling early.
Status runLearnCommand(const LearnFlags& flags, std::ostream& out, const std::atomic<bool>* stop);

}  // namespace floodgate::learn
