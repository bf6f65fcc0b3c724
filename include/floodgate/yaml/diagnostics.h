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
  // The first kMaxKept problems found are kept and shown; later ones are only counted. A
  // hostile or generated file with a million bad values must not become a million lines
  // of output and their memory, and no one fixes more than this before checking again.
  static constexpr size_t kMaxKept = 200;

  // line and column 1-based. A control character in the message (a newline quoted from a
  // file) is kept as an escape (\n, \x1b), so each diagnostic stays one line.
  void add(std::string file, int line, int column, std::string message);
  void add(Diagnostic diagnostic);
  // Counts `count` problems found elsewhere and not kept (when copying another collector).
  void addOmitted(size_t count) { omitted_ += count; }

  bool empty() const { return items_.empty() && omitted_ == 0; }
  // Every problem found, kept or not.
  size_t size() const { return items_.size() + omitted_; }
  // Problems found beyond kMaxKept, counted but not kept.
  size_t omitted() const { return omitted_; }
  const std::vector<Diagnostic>& items() const { return items_; }

  // Every kept diagnostic formatted, one per line, in the order found, then one line
  // saying how many more there were.
  std::string format() const;

 private:
  bool keep();

  std::vector<Diagnostic> items_;
  size_t omitted_ = 0;
};

}  // namespace floodgate::config
