// SPDX-License-Identifier: MIT
// CIDR list files for allow, deny and match.src: one CIDR per line, `#` starts a comment.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/distinct_cidrs.h"
#include "floodgate/yaml/diagnostics.h"

namespace floodgate::config {

// At most this many bad lines of one file are reported one by one; the rest are counted.
inline constexpr size_t kMaxFileDiagnostics = 20;

// Adds every CIDR of the file at `path` to `out` (one already there adds nothing), or stops at
// the first that takes `out` past `most` prefixes of one family (that one added, for the caller
// to see it past). Bad lines are reported as `path:line:column: message`. Returns the CIDRs read
// (repeats counted), or nothing when the file cannot be read (not reported: the caller knows where
// the file was named). Reads the file in one piece, so a list of 100k prefixes takes milliseconds.
std::optional<size_t> readCidrFile(const std::string& path, DistinctCidrs& out,
                                   Diagnostics& diagnostics, std::string* read_error,
                                   size_t most = SIZE_MAX);

}  // namespace floodgate::config
