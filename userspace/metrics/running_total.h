// SPDX-License-Identifier: MIT
// RunningTotal: a Prometheus counter made from readings of a sum whose terms may go away.
// floodgate_bans_failed_total sums the failed bans of the rules running now: a reload that
// removes a rule (or gives its id to a new one, whose counts start at 0) would lower the sum,
// and a counter that goes down reads to Prometheus as a restart, every count after it as new.
// So what the sum rises by between readings is added, and a drop is only the new start:
// never lower than before, at the price of missing what rose in the same interval as a drop.
#pragma once

#include <cstdint>

namespace floodgate::metrics {

class RunningTotal {
 public:
  // Takes a reading of the sum; the total so far.
  uint64_t read(uint64_t sum) {
    if (sum > last_) total_ += sum - last_;
    last_ = sum;
    return total_;
  }

 private:
  uint64_t last_ = 0;
  uint64_t total_ = 0;
};

}  // namespace floodgate::metrics
