// SPDX-License-Identifier: MIT
// The source a kernel record names (a slot of the source table, an event) as a Cidr.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "floodgate/common/cidr.h"
#include "floodgate_shared.h"

namespace floodgate {

// `family` is FG_FAMILY_V4 or FG_FAMILY_V6, `addr` 16 bytes (an IPv4 address in the first
// 4); a prefix beyond the family's is clamped to it.
inline Cidr kernelCidr(uint8_t family, const uint8_t* addr, uint8_t prefix) {
  Cidr out;
  out.family = family == FG_FAMILY_V6 ? Family::kV6 : Family::kV4;
  std::memcpy(out.addr.data(), addr, out.addr.size());
  out.prefix = std::min<uint8_t>(prefix, static_cast<uint8_t>(out.maxPrefix()));
  return out;
}

}  // namespace floodgate
