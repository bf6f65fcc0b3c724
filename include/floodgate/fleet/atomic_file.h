// SPDX-License-Identifier: MIT
// Replacing a file so that readers see the old content or the new, never a part of either.
#pragma once

#include <string>

#include "floodgate/common/result.h"

namespace floodgate::http {

// Writes `text` to `path` by replaceFile (floodgate/common/write_file.h), the directories on
// the way made if missing: a reader that opens `path` at any moment, even across a crash,
// reads a whole file, and no link in the path is followed. Mode 0644 (services read it as
// another user). An error names the path.
Status writeFileAtomically(const std::string& path, const std::string& text);

}  // namespace floodgate::http
