// SPDX-License-Identifier: MIT
// Bounded histograms of per-source rates and their nearest-rank percentiles.
#include "learn/rate_histogram.h"

#include <bit>

namespace floodgate::learn {

uint64_t RateHistogram::bucketOf(uint64_t value) {
  if (value < kExactBelow) return value;
  // keep the top 11 bits, rounding the rest up
  const int drop = std::bit_width(value) - 11;
  const uint64_t step = 1ULL << drop;
  const uint64_t rounded = (value + step - 1) & ~(step - 1);
  return rounded < value ? value : rounded;  // the top bucket cannot round past 2^64
}

void RateHistogram::add(uint64_t value) {
  ++counts_[bucketOf(value)];
  ++count_;
  if (value > max_) max_ = value;
}

uint64_t RateHistogram::percentile(uint64_t permille_thousandths) const {
  if (count_ == 0) return 0;
  // rank = ceil(p × n), in integers so that 99.9 % of 1000 values is the 999th exactly
  const unsigned __int128 scaled = static_cast<unsigned __int128>(permille_thousandths) * count_;
  uint64_t rank = static_cast<uint64_t>((scaled + 99999) / 100000);
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (const auto& [value, n] : counts_) {
    seen += n;
    if (seen >= rank) return value < max_ ? value : max_;
  }
  return max_;
}

}  // namespace floodgate::learn
