// SPDX-License-Identifier: MIT
// Reads a whole file into memory, with the OS's reason when it cannot, refusing anything
// but a regular file of bounded size: a FIFO would block a reload forever, /dev/zero would
// never end, and a huge file would exhaust memory.
#pragma once

#include <cstdint>
#include <string>

#include "floodgate/common/result.h"

namespace floodgate {

// The most bytes a config file may have (floodgate.yaml, or a service's own http: config).
constexpr uint64_t kMaxConfigBytes = 4ULL << 20;  // 4 MiB
// The most bytes a CIDR list file may have: a million IPv6 prefixes with room for comments.
constexpr uint64_t kMaxListFileBytes = 64ULL << 20;  // 64 MiB

// The file's bytes, or an error whose message says why alone ("No such file or directory",
// "not a regular file (a FIFO)", "larger than 4 MiB"), for the caller to put in context.
Result<std::string> readWholeFile(const std::string& path, uint64_t max_bytes);

// A config file's bytes (at most kMaxConfigBytes), or a failure that says
// "PATH: cannot read the config file: WHY".
Result<std::string> readConfigFile(const std::string& path);

}  // namespace floodgate
