// SPDX-License-Identifier: MIT
// runCommand: runs a program (no shell), returns its exit code, stdout and stderr.
#pragma once

#include <string>
#include <vector>

namespace floodgate::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult runCommand(const std::vector<std::string>& argv);

}  // namespace floodgate::test
