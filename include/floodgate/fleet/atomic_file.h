// SPDX-License-Identifier: MIT
// Replacing a file so that readers see the old content or the new, never a part of either.
#pragma once

#include <string>

#include "floodgate/common/result.h"

namespace floodgate::http {

// Writes `text` to a temporary file in `path`'s directory (made if missing), fsyncs it,
// renames it over `path` and fsyncs the directory: a reader that opens `path` at any moment,
// even across a crash, reads a whole file. Mode 0644 (services read it as another user).
Status writeFileAtomically(const std::string& path, const std::string& text);

}  // namespace floodgate::http
