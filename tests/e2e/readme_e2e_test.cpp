// SPDX-License-Identifier: MIT
// README.md's command examples, read from the README at run time and run in order against
// a veth network with eth0 swapped for its interface: each must exit as the README says.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/veth_network.h"

#ifndef FLOODGATE_README
#error "FLOODGATE_README must name README.md"
#endif

namespace floodgate::test {
namespace {

// The sections whose ```sh blocks are run, in this order.
const std::vector<std::string> kSections = {"Protecting a real interface",
                                            "Rules from a config file"};

// Commands of those sections the veth network cannot run, as the README writes them (after the
// comment is cut), each with why. Empty today: every example runs. Keep it that way.
struct Skipped {
  std::string command;
  std::string reason;
};
const std::vector<Skipped> kSkipped = {};

// The README's interface, swapped for the veth network's.
constexpr const char* kReadmeInterface = "eth0";

struct Example {
  std::string section;
  int line = 0;         // in README.md, 1-based
  std::string command;  // as written, without its comment
};

std::string trim(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// Every command of the ```sh blocks under `## <section>`: comments cut, `\` continuations
// joined. A missing section is an empty list (the test fails on it).
std::vector<Example> readExamples(const std::string& readme, const std::string& section) {
  std::ifstream in(readme);
  std::vector<Example> examples;
  std::string line, pending;
  int number = 0, pending_line = 0;
  bool in_section = false, in_block = false;
  while (std::getline(in, line)) {
    ++number;
    if (!in_block && line.starts_with("## ")) in_section = line == "## " + section;
    if (!in_section) continue;
    if (line.starts_with("```")) {
      in_block = !in_block && trim(line) == "```sh";
      continue;
    }
    if (!in_block) continue;
    // a comment starts at a '#' that begins a word (no example quotes one)
    const size_t hash = line.find(" #");
    std::string text = line.starts_with("#") ? "" : line.substr(0, hash);
    if (pending.empty()) pending_line = number;
    text = trim(text);
    if (text.ends_with("\\")) {
      pending += text.substr(0, text.size() - 1) + " ";
      continue;
    }
    pending = trim(pending + text);
    if (!pending.empty()) examples.push_back({section, pending_line, pending});
    pending.clear();
  }
  return examples;
}

std::vector<std::string> words(const std::string& command) {
  std::istringstream in(command);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

class ReadmeE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create({"198.18.0.2"});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
    char dir[] = "/tmp/fg-readme-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (net_) net_->floodgate({"detach", net_->targetInterface()});
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // A config the README names (relative to the repository), copied under the temp dir with
  // the README's interface swapped for the veth network's; other files the copy names come along.
  std::string netConfig(const std::string& relative) {
    const std::filesystem::path source = std::filesystem::path(FLOODGATE_SOURCE_DIR) / relative;
    const std::filesystem::path copy = std::filesystem::path(dir_) / relative;
    if (!std::filesystem::exists(copy)) {
      std::filesystem::create_directories(copy.parent_path());
      std::filesystem::copy(
          source.parent_path(), copy.parent_path(),
          std::filesystem::copy_options::recursive | std::filesystem::copy_options::skip_existing);
      std::ifstream in(source);
      std::stringstream text;
      text << in.rdbuf();
      std::string yaml = text.str();
      for (size_t at = yaml.find(kReadmeInterface); at != std::string::npos;
           at = yaml.find(kReadmeInterface, at)) {
        yaml.replace(at, std::string(kReadmeInterface).size(), net_->targetInterface());
        at += net_->targetInterface().size();
      }
      std::ofstream(copy, std::ios::trunc) << yaml;
    }
    return copy.string();
  }

  // The README's command as the veth network runs it: interface and config paths swapped.
  std::vector<std::string> netArgs(const std::vector<std::string>& argv) {
    std::vector<std::string> args(argv.begin() + 1, argv.end());
    for (std::string& arg : args) {
      if (arg == kReadmeInterface) arg = net_->targetInterface();
      if (arg.starts_with("config/") && arg.ends_with(".yaml")) arg = netConfig(arg);
    }
    return args;
  }

  std::unique_ptr<VethNetwork> net_;
  std::string dir_;
};

TEST_F(ReadmeE2eTest, EveryCommandOfTheInterfaceAndConfigSectionsExitsAsTheReadmeSays) {
  std::vector<Example> examples;
  for (const std::string& section : kSections) {
    std::vector<Example> found = readExamples(FLOODGATE_README, section);
    ASSERT_FALSE(found.empty()) << "README.md has no ```sh commands under '## " << section
                                << "': update kSections with the README";
    examples.insert(examples.end(), found.begin(), found.end());
  }
  std::vector<std::string> skips_used;
  for (const Example& example : examples) {
    SCOPED_TRACE("README.md:" + std::to_string(example.line) + " (" + example.section +
                 "): " + example.command);
    auto skip = std::find_if(kSkipped.begin(), kSkipped.end(),
                             [&](const Skipped& s) { return s.command == example.command; });
    if (skip != kSkipped.end()) {
      std::cout << "skipped README.md:" << example.line << ": " << example.command << " ("
                << skip->reason << ")\n";
      skips_used.push_back(skip->command);
      continue;
    }
    const std::vector<std::string> argv = words(example.command);
    ASSERT_EQ(argv.front(), "floodgate") << "only floodgate commands can run here; add the "
                                            "command to kSkipped with the reason";
    std::cout << "README.md:" << example.line << ": " << example.command << "\n";
    CommandResult run = net_->floodgate(netArgs(argv));
    // Every example of these sections is one the README expects to succeed.
    EXPECT_EQ(run.exit_code, 0) << "stdout: " << run.out << "\nstderr: " << run.err;
  }
  for (const Skipped& skip : kSkipped) {
    EXPECT_NE(std::find(skips_used.begin(), skips_used.end(), skip.command), skips_used.end())
        << "kSkipped names '" << skip.command << "', which the README no longer has";
  }
}

// Where the README says the binaries are built is where CMake puts them.
TEST(ReadmeBuildPaths, TheReadmeNamesWhereEachBinaryIsBuilt) {
  std::ifstream in(FLOODGATE_README);
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const std::string build_dir = FLOODGATE_BUILD_DIR;
  for (const std::string& binary :
       {std::string(FLOODGATE_BIN), std::string(FLOODGATE_HTTP_EXAMPLE_BIN)}) {
    ASSERT_TRUE(binary.starts_with(build_dir + "/")) << binary;
    const std::string documented = "build/" + binary.substr(build_dir.size() + 1);
    EXPECT_NE(readme.find("`" + documented + "`"), std::string::npos)
        << "README.md does not say the binary is `" << documented << "`";
  }
}

}  // namespace
}  // namespace floodgate::test
