// SPDX-License-Identifier: MIT
// How many writes of its config (reloads) a limiter has had, pinned beside its maps: every
// reload that got past its checks adds one under the limiter's writer lock, so a process that
// remembers the count after its own write tells another process's write from its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "floodgate/common/result.h"

namespace floodgate {

// The pin's name in the limiter's directory: an array of one 64-bit count that the
// controller alone reads and writes (the XDP program has no use for it).
inline constexpr const char* kWriteGenerationName = "write_gen";

// The count for `interface`; none while it has no count pinned (a limiter attached by an
// older floodgate and not reloaded since, or one being detached).
Result<std::optional<uint64_t>> readWriteGeneration(const std::string& interface);

// Adds one to the count for `interface` and returns the new count, pinning the count first
// if the limiter has none (one attached by an older floodgate) and its settings are pinned
// (not one being detached). The caller holds the writer lock, so no two processes add at
// once.
Result<uint64_t> bumpWriteGeneration(const std::string& interface);

}  // namespace floodgate
