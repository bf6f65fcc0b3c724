// SPDX-License-Identifier: MIT
// A CIDR list being read: each prefix once, in the order first seen.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "floodgate/common/cidr.h"

namespace floodgate::config {

// The prefixes of a list as it is read, a repeated one kept once: a list's bound is on the
// entries its maps take, and two feeds that overlap (blocklists mostly do) take one entry for
// each prefix they share. Repeats cost no memory, so a file of one line repeated is bounded by
// its size alone. The index hashes under this process's secret key: a feed cannot be written to
// put its prefixes in one probe chain.
class DistinctCidrs {
 public:
  // Appends `cidr` unless the list holds it already; true when appended.
  bool add(const Cidr& cidr);
  size_t size() const { return cidrs_.size(); }
  // Prefixes held of one family.
  size_t count(Family family) const { return by_family_[family == Family::kV6]; }
  const Cidr& operator[](size_t i) const { return cidrs_[i]; }
  // The prefixes in first-seen order; the list is empty after.
  std::vector<Cidr> take();

 private:
  void grow();

  std::vector<Cidr> cidrs_;
  std::array<size_t, 2> by_family_{};  // IPv4, IPv6
  // Open addressing, linear probing: index + 1 into cidrs_, 0 for a free slot; at most three
  // quarters full, a power of two in size (4 bytes a prefix or so beside its 18).
  std::vector<uint32_t> slots_;
};

}  // namespace floodgate::config
