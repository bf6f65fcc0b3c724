// SPDX-License-Identifier: MIT
// Runs `floodgate lab` from its flags in a test, as the CLI would, capturing what it prints.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/commands.h"

namespace floodgate::http::lab::testing {

// CLI11's parse errors (usage errors, exit 2) are thrown; the command's Status is returned.
inline Status runCli(std::vector<std::string> args, std::string& output) {
  CLI::App app{"test"};
  cli::Action selected;
  cli::addLabCommand(app, selected);
  args.insert(args.begin(), "floodgate");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  EXPECT_TRUE(static_cast<bool>(selected));
  ::testing::internal::CaptureStdout();
  Status status = selected();
  output = ::testing::internal::GetCapturedStdout();
  return status;
}

}  // namespace floodgate::http::lab::testing
