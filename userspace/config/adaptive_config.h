// SPDX-License-Identifier: MIT
// AdaptiveConfig: an interface's `adaptive:` section, the load the host can take and how far
// and how fast `floodgate run` may squeeze the named rules' limits to keep it there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "controller/rule_spec.h"

namespace floodgate::config {

// The lowest limits one rule may be squeezed to. A rate left at 0 is not squeezed; a burst
// follows its rate down to this floor (defaulted in proportion to the rule's own).
struct AdaptiveFloor {
  std::string rule;
  LimitSpec floor;
  bool operator==(const AdaptiveFloor&) const = default;
};

struct AdaptiveConfig {
  // What the host can take, measured as the packets and frame bits a second the program
  // passes on the interface; 0: that measure is not watched (at least one is set).
  uint64_t capacity_pps = 0;
  uint64_t capacity_bps = 0;
  std::vector<AdaptiveFloor> floors;  // in file order, each rule once
  double step = 0.5;                  // a tightening multiplies the limits by this
  uint64_t interval_ns = 1'000'000'000;
  // Relax only while the load stays below capacity × relax_below (at most `step`, so one
  // relax step cannot lift a steady load back over capacity) for relax_after.
  double relax_below = 0.5;
  uint64_t relax_after_ns = 30'000'000'000;
  bool operator==(const AdaptiveConfig&) const = default;
};

}  // namespace floodgate::config
