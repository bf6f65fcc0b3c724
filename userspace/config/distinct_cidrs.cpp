// SPDX-License-Identifier: MIT
// DistinctCidrs: the list in a vector, an index of positions in an open-addressed table.
#include "config/distinct_cidrs.h"

#include <string_view>

#include "floodgate/core/keyed_hash.h"

namespace floodgate::config {
namespace {

uint64_t hashOf(const Cidr& cidr) {
  char bytes[18];
  bytes[0] = static_cast<char>(cidr.family);
  bytes[1] = static_cast<char>(cidr.prefix);
  for (size_t i = 0; i < cidr.addr.size(); ++i) bytes[2 + i] = static_cast<char>(cidr.addr[i]);
  return http::keyedHash(std::string_view(bytes, sizeof bytes));
}

}  // namespace

bool DistinctCidrs::add(const Cidr& cidr) {
  if (4 * (cidrs_.size() + 1) > 3 * slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  for (size_t at = hashOf(cidr) & mask;; at = (at + 1) & mask) {
    const uint32_t held = slots_[at];
    if (held == 0) {
      cidrs_.push_back(cidr);
      ++by_family_[cidr.family == Family::kV6];
      slots_[at] = static_cast<uint32_t>(cidrs_.size());
      return true;
    }
    if (cidrs_[held - 1] == cidr) return false;
  }
}

void DistinctCidrs::grow() {
  std::vector<uint32_t> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : 2 * old.size(), 0);
  const size_t mask = slots_.size() - 1;
  for (uint32_t held : old) {
    if (held == 0) continue;
    size_t at = hashOf(cidrs_[held - 1]) & mask;
    while (slots_[at] != 0) at = (at + 1) & mask;
    slots_[at] = held;
  }
}

std::vector<Cidr> DistinctCidrs::take() {
  std::vector<Cidr> out = std::move(cidrs_);
  cidrs_.clear();
  by_family_ = {};
  slots_.clear();
  return out;
}

}  // namespace floodgate::config
