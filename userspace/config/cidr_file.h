// SPDX-License-Identifier: MIT
// CIDR list files for allow, deny and match.src: one CIDR per line, `#` starts a comment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "floodgate/common/cidr.h"
#include "floodgate/yaml/diagnostics.h"

namespace floodgate::config {

// At most this many bad lines of one file are reported one by one; the rest are counted.
inline constexpr size_t kMaxFileDiagnostics = 20;

// Appends every CIDR of the file at `path` to `out`, or stops at the first that takes `out`
// past `most` entries (that one appended, for the caller to see it past). Bad lines are
// reported as `path:line:column: message`. Returns false when the file cannot be read (not
// reported: the caller knows where the file was named). Reads the file in one piece, so a
// list of 100k prefixes takes milliseconds.
bool readCidrFile(const std::string& path, std::vector<Cidr>& out, Diagnostics& diagnostics,
                  std::string* read_error, size_t most = SIZE_MAX);

}  // namespace floodgate::config
