// SPDX-License-Identifier: MIT
// How many whole writes of its config (reloads) a limiter has had, pinned beside its maps:
// every reload adds one under the limiter's writer lock, so a process that remembers the
// count after its own write tells another process's write from its own.
#pragma once

#include <cstdint>
#include <string>

#include "floodgate/common/result.h"

namespace floodgate {

// The pin's name in the limiter's directory: an array of one 64-bit count that the
// controller alone reads and writes (the XDP program has no use for it).
inline constexpr const char* kWriteGenerationName = "write_gen";

// The count for `interface`; 0 while no reload since the pin came has counted.
Result<uint64_t> readWriteGeneration(const std::string& interface);

// Adds one to the count for `interface` and returns the new count, pinning the count first
// if the limiter has none (one attached by an older floodgate). The caller holds the writer
// lock, so no two processes add at once.
Result<uint64_t> bumpWriteGeneration(const std::string& interface);

}  // namespace floodgate
