// SPDX-License-Identifier: MIT
// Daemon logging: one line per event on stderr with a syslog priority prefix (`<6>`), which
// journald turns into the entry's priority. Never per packet. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "floodgate/common/text.h"

namespace floodgate::daemon {

void logError(const std::string& line);    // <3>
void logWarning(const std::string& line);  // <4>
void logInfo(const std::string& line);     // <6>

// Text from outside goes through floodgate::printable (common/text.h) before it is logged.
using floodgate::printable;

}  // namespace floodgate::daemon
