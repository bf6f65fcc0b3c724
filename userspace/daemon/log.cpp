// SPDX-License-Identifier: MIT
// Priority-prefixed lines, written whole with one write so threads never interleave them.
#include "daemon/log.h"

#include <unistd.h>

namespace floodgate::daemon {
namespace {

void emit(const char* prefix, const std::string& line) {
  std::string out = prefix + line + "\n";
  ssize_t ignored = write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;  // nowhere left to report a failed log write
}

}  // namespace

void logError(const std::string& line) { emit("<3>", line); }
void logWarning(const std::string& line) { emit("<4>", line); }
void logInfo(const std::string& line) { emit("<6>", line); }

}  // namespace floodgate::daemon
