// SPDX-License-Identifier: MIT
// Text from outside (a reporter's name, an interface name on a command line) made safe to
// print on one line, interface names checked before they become part of a path, and counts
// and lists worded in agreement.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "floodgate/common/result.h"

namespace floodgate {

// `text` fit for one line of a log or an error, and for a quoted value of a log line
// (`reporter="..."`): control characters, which could forge lines or hide text, quotes and
// backslashes, which could end the value and forge fields after it, and bytes past ASCII
// (line separators and marks that turn text around, in UTF-8) as '?'; at most `max` bytes.
std::string printable(std::string_view text, size_t max = 200);

// `n` and the noun that agrees with it: "1 problem", "2 problems", "0 problems".
std::string counted(size_t n, std::string_view one, std::string_view many);

// `names` as a list in a sentence: "a", "a and b", "a, b and c".
std::string joined(const std::vector<std::string>& names);

// Whether `name` can name a Linux network interface and is safe as a path component: 1 to
// 15 bytes, not "." or "..", and no '/', ':', whitespace or other control characters.
bool validInterfaceName(std::string_view name);

// The same check as a usage error that says what is wrong (the name shown printable).
Status checkInterfaceName(std::string_view name);

}  // namespace floodgate
