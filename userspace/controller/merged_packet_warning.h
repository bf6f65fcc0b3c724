// SPDX-License-Identifier: MIT
// mergedPacketWarning: what a generic attach says when a flow's segments reach the program
// merged. Generic XDP runs on the kernel's packets: a merged packet of up to 64 KB counts
// once against a `pps` limit, so dozens to hundreds of segments get through for one. The
// program cannot tell (XDP sees no segment count); turning the merging off is the fix.
#pragma once

#include <optional>
#include <string>

#include "kernel/receive_merging.h"

namespace floodgate {

// One line naming what merges on the way to `interface` and the commands that turn it off;
// nullopt when nothing does.
std::optional<std::string> mergedPacketWarning(const std::string& interface,
                                               const ReceiveMerging& merging);

// mergedPacketWarning for what `interface` has now; a line saying it could not be read (and
// what to check by hand) when it cannot.
std::optional<std::string> mergedPacketWarning(const std::string& interface);

}  // namespace floodgate
