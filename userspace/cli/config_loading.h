// SPDX-License-Identifier: MIT
// Reading a config for a command that changes a limiter: diagnostics go to stderr one per
// line (file:line:column: message) and the command gets one error that nothing changed.
#pragma once

#include <string>

#include "controller/xdp_limiter.h"
#include "floodgate/common/result.h"

namespace floodgate::cli {

// The AttachOptions `file` gives `interface`, or an error after printing every problem.
Result<AttachOptions> optionsFromConfig(const std::string& file, const std::string& interface);

}  // namespace floodgate::cli
