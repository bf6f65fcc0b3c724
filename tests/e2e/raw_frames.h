// SPDX-License-Identifier: MIT
// Sends frames exactly as built (crafted headers, cut short, any source) out of an
// interface in a network namespace, through a packet socket: the way to put odd
// frames in front of the limiter on the far end of its veth.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "floodgate/common/result.h"

namespace floodgate::test {

// Sends each frame once, in order; returns how many the socket took (all, or an error).
Result<uint64_t> sendFrames(const std::string& netns, const std::string& interface,
                            const std::vector<std::vector<uint8_t>>& frames);

}  // namespace floodgate::test
