// SPDX-License-Identifier: MIT
// floodgate_xdp_lines on the real floodgate program, loaded: every source line it prints
// lies in one of the functions it prints, in address order, and the program's own lines
// are among them; a program that is not there is refused in one line.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/command.h"
#include "controller/xdp_limiter.h"
#include "kernel/pins.h"

namespace floodgate::test {
namespace {

struct Range {
  unsigned long long start, end;
};

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class XdpLinesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "loading BPF programs needs root";
    pins_ = "xdp-lines-test-" + std::to_string(getpid());
    AttachOptions options;
    options.interface = pins_;
    RuleSpec rule;
    rule.name = "r0";
    rule.limit.pps = 100;
    rule.limit.burst = 100;
    options.rules = {rule};
    auto loaded = XdpLimiter::load(options);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    loaded_.emplace(std::move(*loaded));
    bpf_prog_info info{};
    uint32_t size = sizeof(info);
    ASSERT_EQ(bpf_obj_get_info_by_fd(loaded_->programFd(), &info, &size), 0);
    id_ = info.id;
  }
  void TearDown() override {
    loaded_.reset();
    if (!pins_.empty()) (void)removePins(pins_);
  }

  std::string pins_;
  std::optional<LoadedXdpLimiter> loaded_;
  uint32_t id_ = 0;
};

TEST_F(XdpLinesTest, EverySourceLineLiesInOneOfTheProgramsFunctionsInAddressOrder) {
  CommandResult functions =
      runCommand({FLOODGATE_XDP_LINES, "--id", std::to_string(id_), "--functions"});
  ASSERT_EQ(functions.exit_code, 0) << functions.err;
  std::vector<Range> ranges;
  for (const std::string& line : linesOf(functions.out)) {
    Range range{};
    ASSERT_EQ(std::sscanf(line.c_str(), "%llx\t%llx", &range.start, &range.end), 2) << line;
    ASSERT_LT(range.start, range.end) << line;
    ranges.push_back(range);
  }
  // the main program and its global functions (fg_rule_admits, fg_rule_walk, ...)
  EXPECT_GT(ranges.size(), 2u);

  CommandResult lines = runCommand({FLOODGATE_XDP_LINES, "--id", std::to_string(id_)});
  ASSERT_EQ(lines.exit_code, 0) << lines.err;
  unsigned long long previous = 0;
  bool entry_seen = false;
  std::vector<std::string> all = linesOf(lines.out);
  ASSERT_GT(all.size(), 100u);
  for (const std::string& line : all) {
    size_t tab = line.find('\t'), second = line.find('\t', tab + 1);
    ASSERT_EQ(tab, 16u) << line;
    ASSERT_NE(second, std::string::npos) << line;
    unsigned long long address = std::stoull(line.substr(0, tab), nullptr, 16);
    EXPECT_GE(address, previous) << line;
    previous = address;
    bool inside = false;
    for (const Range& range : ranges) inside |= address >= range.start && address < range.end;
    EXPECT_TRUE(inside) << "outside every function: " << line;
    std::string where = line.substr(tab + 1, second - tab - 1);
    if (where.rfind("floodgate.bpf.c:", 0) == 0 &&
        line.find("settings = bpf_map_lookup_elem(&settings_map, &zero);") != std::string::npos)
      entry_seen = true;
  }
  EXPECT_TRUE(entry_seen) << "the program's own first lookup is not among its lines";
}

TEST_F(XdpLinesTest, AProgramThatIsNotThereIsRefusedInOneLine) {
  // the last ID there is: no machine has loaded four billion programs since it booted
  CommandResult result = runCommand({FLOODGATE_XDP_LINES, "--id", "4294967295"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err,
            "floodgate_xdp_lines: error: no program with ID 4294967295 (run as root)\n");
  EXPECT_TRUE(result.out.empty());
}

}  // namespace
}  // namespace floodgate::test
