// SPDX-License-Identifier: MIT
// mergedPacketWarning: what a generic attach says when the interface merges a TCP flow's
// segments before the program. Generic XDP runs on the kernel's packets, after GRO (and a
// NIC's LRO) merged them: a merged packet of up to 64 KB counts once against a `pps` limit,
// so up to ~45 segments get through for one. The program cannot tell (XDP sees no segment
// count); turning the merging off is the fix.
#pragma once

#include <optional>
#include <string>

#include "kernel/receive_merging.h"

namespace floodgate {

// One line naming what merges on `interface` and the ethtool command that turns it off;
// nullopt when nothing does.
std::optional<std::string> mergedPacketWarning(const std::string& interface,
                                               const ReceiveMerging& merging);

// mergedPacketWarning for the features `interface` has now; a line saying they could not be
// read (and what to check by hand) when they cannot.
std::optional<std::string> mergedPacketWarning(const std::string& interface);

}  // namespace floodgate
