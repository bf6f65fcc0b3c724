// SPDX-License-Identifier: MIT
// Small helpers for HTTP header text (RFC 9110): optional whitespace and case-insensitive
// names and tokens.
#pragma once

#include <string_view>

namespace floodgate::http {

// `s` without leading and trailing spaces and tabs (OWS).
std::string_view trimOws(std::string_view s);

// Whether `a` and `b` are equal ignoring ASCII case.
bool equalsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace floodgate::http
