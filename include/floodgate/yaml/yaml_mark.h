// SPDX-License-Identifier: MIT
// Turns a yaml-cpp node's position (0-based Mark) into a 1-based diagnostic.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "floodgate/yaml/diagnostics.h"

namespace floodgate::config {

// Adds `message` at `node`'s position in `file` (yaml-cpp marks are 0-based; ours 1-based).
inline void addAt(Diagnostics& diagnostics, const std::string& file, const YAML::Node& node,
                  std::string message) {
  YAML::Mark mark = node.Mark();
  if (mark.is_null()) {
    diagnostics.add(file, 0, 0, std::move(message));
  } else {
    diagnostics.add(file, mark.line + 1, mark.column + 1, std::move(message));
  }
}

}  // namespace floodgate::config
