// SPDX-License-Identifier: MIT
// The configs the project ships parse clean, and every rule in them compiles for the program.
#include <gtest/gtest.h>

#include <filesystem>

#include "config/floodgate_config.h"
#include "controller/rule_compiler.h"

namespace floodgate::config {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> shippedConfigs() {
  const fs::path root(FLOODGATE_SOURCE_DIR);
  std::vector<fs::path> out{root / "config/floodgate.yaml"};
  for (const auto& entry : fs::directory_iterator(root / "config/examples")) {
    if (entry.path().extension() == ".yaml") out.push_back(entry.path());
  }
  return out;
}

TEST(ShippedConfigs, ParseCleanAndCompile) {
  std::vector<fs::path> configs = shippedConfigs();
  EXPECT_GE(configs.size(), 7u);  // the default and six examples
  for (const fs::path& path : configs) {
    SCOPED_TRACE(path.string());
    Diagnostics diagnostics;
    FloodgateConfig config = loadConfig(path.string(), diagnostics);
    EXPECT_TRUE(diagnostics.empty()) << diagnostics.format();
    for (const RuleSpec& rule : config.rules) {
      Result<fg_rule> compiled = compileRule(rule);
      EXPECT_TRUE(compiled.ok()) << rule.name << ": " << compiled.error().message;
    }
    if (!path.filename().string().starts_with("http-")) {  // http-only examples have no rules
      EXPECT_FALSE(config.rules.empty());
    }
  }
}

TEST(ShippedConfigs, DefaultGivesAttachOptions) {
  Result<FloodgateConfig> config =
      loadValidConfig(std::string(FLOODGATE_SOURCE_DIR) + "/config/floodgate.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  Result<AttachOptions> options = attachOptionsFor(*config, "eth1");
  ASSERT_TRUE(options.ok()) << options.error().message;
  EXPECT_EQ(options->interface, "eth1");
  EXPECT_EQ(options->mode, XdpMode::kNative);
  EXPECT_EQ(options->rules.size(), config->rules.size());
  for (size_t i = 0; i < options->rules.size(); ++i) EXPECT_EQ(options->rules[i].id, i);
  ASSERT_TRUE(options->deny.has_value());
  EXPECT_EQ(options->deny->size(), 1u);
  Result<AttachOptions> other = attachOptionsFor(*config, "wlan0");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().message,
            "interface 'wlan0' is not in the config's interfaces (eth0, eth1): add it there, or "
            "name one of those");
}

TEST(ShippedConfigs, WebExampleReadsItsBlocklistFile) {
  Diagnostics diagnostics;
  FloodgateConfig config = loadConfig(
      std::string(FLOODGATE_SOURCE_DIR) + "/config/examples/web-syn-flood.yaml", diagnostics);
  ASSERT_TRUE(diagnostics.empty()) << diagnostics.format();
  ASSERT_TRUE(config.deny.has_value());
  EXPECT_EQ(config.deny->size(), 4u);
}

}  // namespace
}  // namespace floodgate::config
