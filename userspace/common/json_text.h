// SPDX-License-Identifier: MIT
// jsonText: a JSON value as the text of a command's --json output. What it holds can carry
// bytes that are not UTF-8 (a config's names and the diagnostics quoting them, interface
// names); nlohmann's dump throws on those, which would abort the command, so they are
// written as U+FFFD instead.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace floodgate {

inline std::string jsonText(const nlohmann::json& value, int indent = 2) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace floodgate
