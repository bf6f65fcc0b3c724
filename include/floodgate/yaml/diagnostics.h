// SPDX-License-Identifier: MIT
// Config diagnostics: each problem found in a file, reported as `file:line:column: message`.
#pragma once

#include <string>
#include <vector>

namespace floodgate::config {

// One problem at one place in one file. line and column are 1-based; 0 means unknown
// (the problem is about the whole file, e.g. it cannot be read).
struct Diagnostic {
  std::string file;
  int line = 0;
  int column = 0;
  std::string message;
};

// `file:line:column: message`, or `file: message` when the position is unknown.
std::string formatDiagnostic(const Diagnostic& diagnostic);

// Collects every problem a validator finds, so a user can fix them all in one pass.
// Not thread-safe: one collector per validation.
class Diagnostics {
 public:
  // line and column 1-based. A control character in the message (a newline quoted from a
  // file) is kept as an escape (\n, \x1b), so each diagnostic stays one line.
  void add(std::string file, int line, int column, std::string message);
  void add(Diagnostic diagnostic);

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const std::vector<Diagnostic>& items() const { return items_; }

  // Every diagnostic formatted, one per line, in the order found.
  std::string format() const;

 private:
  std::vector<Diagnostic> items_;
};

}  // namespace floodgate::config
