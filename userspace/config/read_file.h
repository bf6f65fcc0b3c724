// SPDX-License-Identifier: MIT
// Reads a whole file into memory, with the OS's reason when it cannot.
#pragma once

#include <string>

#include "common/result.h"

namespace floodgate::config {

// The file's bytes, or an error whose message is the system's reason alone ("No such file
// or directory"), for the caller to put in context.
Result<std::string> readWholeFile(const std::string& path);

}  // namespace floodgate::config
