// SPDX-License-Identifier: MIT
// Reading the protocol's lines (internal): words split on spaces, and NAME=VALUE fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace floodgate::report {

// The words of `text`, split on runs of spaces, after a trailing newline is dropped.
std::vector<std::string_view> lineWords(std::string_view text);

// The value of "NAME=TEXT" in `field` (non-empty), or nullopt.
std::optional<std::string_view> fieldText(std::string_view field, std::string_view name);

// The value of "NAME=N" in `field` (a whole number, 0 or more), or nullopt.
std::optional<int64_t> fieldValue(std::string_view field, std::string_view name);

}  // namespace floodgate::report
