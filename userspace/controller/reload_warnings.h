// SPDX-License-Identifier: MIT
// reloadKeepsWarnings: what a config asks that a reload (or attach --replace) cannot give a
// running limiter. The table and list sizes are the maps' sizes and the XDP mode the
// program's attachment, all fixed at attach; a reload that takes the rest of the file says
// which it kept, so an operator does not learn it from the next `deny add` that finds the
// list full.
#pragma once

#include <string>
#include <vector>

#include "controller/xdp_limiter.h"

namespace floodgate {

// One line for each of table size, list size and XDP mode that `options` sets otherwise
// than `running` has it, saying what stays and how to get the new value.
std::vector<std::string> reloadKeepsWarnings(const XdpLimiterStatus& running,
                                             const AttachOptions& options);

}  // namespace floodgate
