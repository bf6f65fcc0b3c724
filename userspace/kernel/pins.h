// SPDX-License-Identifier: MIT
// Where a running limiter lives in bpffs: /sys/fs/bpf/floodgate/<interface>/.
#pragma once

#include <string>
#include <vector>

#include "floodgate/common/result.h"

namespace floodgate {

inline constexpr const char* kPinRoot = "/sys/fs/bpf/floodgate";

// The directory of `interface`'s pins.
std::string pinDirectory(const std::string& interface);

// The pin of one map, by its name in the BPF object.
std::string mapPinPath(const std::string& interface, const std::string& map_name);

// The pin of the XDP link; while it exists, the program stays attached.
std::string linkPinPath(const std::string& interface);

// When floodgate runs in a slot of an operator's prog array instead of owning the XDP hook:
// that array, pinned again here, and floodgate's program (the slot is found by its id).
std::string rootArrayPinPath(const std::string& interface);
std::string programPinPath(const std::string& interface);

// floodgate's TC ingress program (the SYN-cookie handover), pinned at load so that a reload
// adding the first cookie rule can attach it.
std::string tcProgramPinPath(const std::string& interface);

// Whether a limiter runs for `interface`: its link or its root array is pinned.
bool pinnedAsAttached(const std::string& interface);

// Interfaces with a limiter running (pinnedAsAttached), sorted.
std::vector<std::string> pinnedInterfaces();

// Creates the pin directory (and kPinRoot).
Status createPinDirectory(const std::string& interface);

// Removes every pin of `interface` and its directory; missing pins are fine.
Status removePins(const std::string& interface);

}  // namespace floodgate
