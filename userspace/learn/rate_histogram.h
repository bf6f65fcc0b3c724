// SPDX-License-Identifier: MIT
// RateHistogram: counts of whole-number values (packets a second, bits a second, packets in
// a burst window) in bounded memory, with nearest-rank percentiles.
#pragma once

#include <cstdint>
#include <map>

namespace floodgate::learn {

// Values below kExactBelow are kept exactly; larger ones are rounded up to 11 significant
// bits (at most 1/1024 above the value), so a histogram never holds more than about 56k
// distinct entries, however many values it is given. Rounding up keeps a percentile on the
// side of a limit that admits the value. Not thread-safe.
class RateHistogram {
 public:
  static constexpr uint64_t kExactBelow = 2048;

  void add(uint64_t value);
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }  // exact
  // The nearest-rank percentile: the smallest recorded value that at least
  // `permille_thousandths` / 100000 of the values are at or below (99.9 % = 99900). 0 when
  // empty. `permille_thousandths` is from 1 to 100000.
  uint64_t percentile(uint64_t permille_thousandths) const;

  // The value `value` is recorded as.
  static uint64_t bucketOf(uint64_t value);

 private:
  std::map<uint64_t, uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t max_ = 0;
};

}  // namespace floodgate::learn
