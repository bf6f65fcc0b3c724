// SPDX-License-Identifier: MIT
// Formatting and collecting config diagnostics.
#include "floodgate/yaml/diagnostics.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace floodgate::config {
namespace {

// Longer than any message of ours: what makes one longer is a value quoted from the file,
// and a megabyte-long value need not be shown whole (once per problem) to be recognised.
constexpr size_t kMaxMessageBytes = 1024;

// A message is one line: a control character it quotes from a file (a newline in a quoted
// YAML value, a terminal escape) is shown escaped, so it can neither forge a line of its own
// nor drive the terminal. A message longer than kMaxMessageBytes is cut there (never inside
// a UTF-8 character) and says how much was left out.
std::string oneLine(std::string message) {
  if (message.size() > kMaxMessageBytes) {
    size_t keep = kMaxMessageBytes;
    while (keep > 0 && (static_cast<unsigned char>(message[keep]) & 0xc0) == 0x80) --keep;
    const size_t left_out = message.size() - keep;
    message.resize(keep);
    message += "... (" + std::to_string(left_out) + " more bytes)";
  }
  auto control = [](unsigned char c) { return c < 0x20 || c == 0x7f; };
  if (std::none_of(message.begin(), message.end(), control)) return message;
  std::string out;
  for (unsigned char c : message) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (control(c)) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string formatDiagnostic(const Diagnostic& d) {
  // the file's name is text from outside too (a list file a config names), escaped alike
  const std::string file = oneLine(d.file);
  if (d.line <= 0) return file + ": " + d.message;
  return file + ":" + std::to_string(d.line) + ":" + std::to_string(d.column) + ": " + d.message;
}

bool Diagnostics::keep() {
  if (items_.size() < kMaxKept) return true;
  ++omitted_;
  return false;
}

void Diagnostics::add(std::string file, int line, int column, std::string message) {
  if (keep()) items_.push_back({std::move(file), line, column, oneLine(std::move(message))});
}

void Diagnostics::add(Diagnostic diagnostic) {
  if (!keep()) return;
  diagnostic.message = oneLine(std::move(diagnostic.message));
  items_.push_back(std::move(diagnostic));
}

std::string Diagnostics::format() const {
  std::string out;
  for (const Diagnostic& d : items_) {
    out += formatDiagnostic(d);
    out += '\n';
  }
  if (omitted_ > 0) {
    out += "... and " + std::to_string(omitted_) +
           (omitted_ == 1 ? " more problem" : " more problems") + " not shown: fix the first " +
           std::to_string(kMaxKept) + " and check again\n";
  }
  return out;
}

}  // namespace floodgate::config
