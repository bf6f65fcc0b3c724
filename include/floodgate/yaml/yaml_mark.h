// SPDX-License-Identifier: MIT
// Turns a yaml-cpp position (a node's or an exception's 0-based Mark) into a 1-based diagnostic.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "floodgate/yaml/diagnostics.h"

namespace floodgate::config {

// Adds `message` at `mark` in `file` (yaml-cpp marks are 0-based; ours 1-based), or for the
// whole file when the mark is null.
inline void addAt(Diagnostics& diagnostics, const std::string& file, const YAML::Mark& mark,
                  std::string message) {
  if (mark.is_null()) {
    diagnostics.add(file, 0, 0, std::move(message));
  } else {
    diagnostics.add(file, mark.line + 1, mark.column + 1, std::move(message));
  }
}

// Adds `message` at `node`'s position.
inline void addAt(Diagnostics& diagnostics, const std::string& file, const YAML::Node& node,
                  std::string message) {
  addAt(diagnostics, file, node.Mark(), std::move(message));
}

// Adds a yaml-cpp exception (a syntax error, or a throw a parser did not foresee) at its mark;
// `prefix` leads its message ("YAML syntax error: ").
inline void addAt(Diagnostics& diagnostics, const std::string& file, const YAML::Exception& e,
                  const std::string& prefix = "") {
  addAt(diagnostics, file, e.mark, prefix + e.msg);
}

}  // namespace floodgate::config
