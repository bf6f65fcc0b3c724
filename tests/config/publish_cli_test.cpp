// SPDX-License-Identifier: MIT
// `floodgate http publish --config FILE` through the built binary: it publishes only from a
// floodgate.yaml the controller would apply, and reads no file but a bounded regular one.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/command.h"

#ifndef FLOODGATE_BIN
#error "FLOODGATE_BIN must name the floodgate binary"
#endif

namespace {

namespace fs = std::filesystem;
using floodgate::test::CommandResult;

CommandResult publish(const std::string& config) {
  return floodgate::test::runCommand({FLOODGATE_BIN, "http", "publish", "--config", config});
}

class PublishCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("floodgate-publish-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A config whose http: section is valid and publishes to a file of the test's directory,
  // with `rest` beside it.
  std::string config(const std::string& rest) {
    const std::string path = (dir_ / "floodgate.yaml").string();
    std::ofstream(path) << "http:\n  publish: {file: " << (dir_ / "policies.yaml").string()
                        << "}\n  policies:\n    - {name: ip, key: ip, algorithm: gcra, "
                           "capacity: 10, rate_per_s: 5}\n"
                        << rest;
    return path;
  }

  fs::path dir_;
};

TEST_F(PublishCommand, PublishesFromAValidConfig) {
  CommandResult run = publish(config("rules:\n  - name: r\n    limit: {pps: 10}\n"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(fs::exists(dir_ / "policies.yaml"));
}

// An empty document before the config is no document: what is published is the http:
// section that was checked, not the empty first document's nothing.
TEST_F(PublishCommand, AnEmptyFirstDocumentPublishesTheConfigsPolicies) {
  const std::string path = config("");
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(path) << "---\n---\n" << text;
  CommandResult run = publish(path);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::ifstream in(dir_ / "policies.yaml");
  const std::string published((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(published.find("name: ip"), std::string::npos) << published;
}

// The controller refuses this file (a bad rule, a misspelt key): its services must not be
// handed its http: section all the same.
TEST_F(PublishCommand, AConfigInvalidOutsideItsHttpSectionPublishesNothing) {
  CommandResult run =
      publish(config("rules:\n  - name: r\n    limit: {pps: tenk}\ndeny_list: []\n"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("is not valid (2 problems, above): nothing was published"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("tenk"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(dir_ / "policies.yaml"));
}

// A FIFO would block the command for ever; it is refused in one line.
TEST_F(PublishCommand, AFifoIsRefusedNotWaitedOn) {
  const std::string fifo = (dir_ / "fifo.yaml").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  CommandResult run = publish(fifo);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("cannot read the config file: not a regular file (a FIFO)"),
            std::string::npos)
      << run.err;
}

}  // namespace
