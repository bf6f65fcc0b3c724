// SPDX-License-Identifier: MIT
// The IPv4 list filters: which words and bits of a list's filter (FG_LIST_FILTER_WORDS
// 64-bit words, one bit per /24) a prefix of the list covers.
#pragma once

#include <cstdint>

#include "floodgate/common/cidr.h"
#include "floodgate_shared.h"

namespace floodgate {

// Calls fn(word, mask) for each filter word with a bit of a /24 that `cidr` (IPv4)
// overlaps; a prefix longer than /24 overlaps the one /24 it is in.
template <class Fn>
void forEachListFilterWord(const Cidr& cidr, Fn&& fn) {
  const uint32_t address = (uint32_t{cidr.addr[0]} << 24) | (uint32_t{cidr.addr[1]} << 16) |
                           (uint32_t{cidr.addr[2]} << 8) | cidr.addr[3];
  const uint32_t prefix = cidr.prefix > 32 ? 32 : cidr.prefix;
  const uint32_t filter_bits = 32 - FG_LIST_FILTER_SHIFT;  // 24
  // the /24s the prefix spans: [first, first + count)
  const uint32_t span_bits = prefix >= filter_bits ? 0 : filter_bits - prefix;
  const uint64_t count = uint64_t{1} << span_bits;
  const uint32_t first = (address >> FG_LIST_FILTER_SHIFT) & ~static_cast<uint32_t>(count - 1);
  if (count >= 64) {
    for (uint64_t word = first / 64; word < (first + count) / 64; ++word) {
      fn(static_cast<uint32_t>(word), ~uint64_t{0});
    }
    return;
  }
  const uint64_t mask = ((uint64_t{1} << count) - 1) << (first % 64);
  fn(first / 64, mask);
}

}  // namespace floodgate
