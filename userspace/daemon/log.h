// SPDX-License-Identifier: MIT
// Daemon logging: one line per event on stderr with a syslog priority prefix (`<6>`), which
// journald turns into the entry's priority. Never per packet. Thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace floodgate::daemon {

void logError(const std::string& line);    // <3>
void logWarning(const std::string& line);  // <4>
void logInfo(const std::string& line);     // <6>

// Text from outside (a reporter's name, a report line) fit for one log line: control
// characters, which could forge lines, as '?', and at most `max` characters.
std::string printable(std::string_view text, size_t max = 200);

}  // namespace floodgate::daemon
