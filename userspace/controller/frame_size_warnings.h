// SPDX-License-Identifier: MIT
// frameSizeWarnings: the rules whose byte buckets hold less than one frame the interface
// can carry. Such a frame is refused however long its source kept quiet (under `on_exceed:
// ban` it starts no ban: the program tells a frame no full bucket admits from a source over
// its limit); config validation knows only a 1500-byte MTU, the interface its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "controller/xdp_limiter.h"

namespace floodgate {

// The largest frame XDP sees on an interface of `mtu`: Ethernet and one VLAN tag, no FCS (a
// double-tagged one is 4 bytes more: warning of those would warn of every 1518-byte bucket
// on a 1500-byte link, where they are rare).
inline uint64_t largestFrameBytes(uint64_t mtu) { return mtu + 18; }

// One line per rule (or its untracked bucket) whose bps bucket or window holds fewer bytes
// than largestFrameBytes(mtu), saying how to fix it.
std::vector<std::string> frameSizeWarnings(const AttachOptions& options, uint64_t mtu);

// The MTU of `interface` in this network namespace; nullopt when it cannot be read.
std::optional<uint64_t> interfaceMtu(const std::string& interface);

// frameSizeWarnings at the MTU of options.interface (none when it cannot be read).
std::vector<std::string> frameSizeWarnings(const AttachOptions& options);

}  // namespace floodgate
