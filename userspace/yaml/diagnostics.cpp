// SPDX-License-Identifier: MIT
// Formatting and collecting config diagnostics.
#include "floodgate/yaml/diagnostics.h"

#include <utility>

namespace floodgate::config {

std::string formatDiagnostic(const Diagnostic& d) {
  if (d.line <= 0) return d.file + ": " + d.message;
  return d.file + ":" + std::to_string(d.line) + ":" + std::to_string(d.column) + ": " + d.message;
}

void Diagnostics::add(std::string file, int line, int column, std::string message) {
  items_.push_back({std::move(file), line, column, std::move(message)});
}

void Diagnostics::add(Diagnostic diagnostic) { items_.push_back(std::move(diagnostic)); }

std::string Diagnostics::format() const {
  std::string out;
  for (const Diagnostic& d : items_) {
    out += formatDiagnostic(d);
    out += '\n';
  }
  return out;
}

}  // namespace floodgate::config
