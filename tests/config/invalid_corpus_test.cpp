// SPDX-License-Identifier: MIT
// Every config under tests/data/invalid/ gives exactly the diagnostics of its .expected file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/floodgate_config.h"

namespace floodgate::config {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(FLOODGATE_SOURCE_DIR) / "tests/data/invalid";

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(InvalidConfigs, EachGivesExactlyItsExpectedDiagnostics) {
  // Loaded from inside the corpus so diagnostics name files as the .expected files do.
  const fs::path previous = fs::current_path();
  fs::current_path(kCorpus);
  size_t checked = 0;
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    fs::path expected_path = entry.path();
    expected_path.replace_extension(".expected");
    ASSERT_TRUE(fs::exists(expected_path)) << "each invalid config needs a .expected file";
    Diagnostics diagnostics;
    loadConfig(name, diagnostics);
    EXPECT_FALSE(diagnostics.empty());
    EXPECT_EQ(diagnostics.format(), slurp(expected_path));
    ++checked;
  }
  fs::current_path(previous);
  EXPECT_GE(checked, 10u);
}

}  // namespace
}  // namespace floodgate::config
