// SPDX-License-Identifier: MIT
// XdpProgramTest: loads the real XDP object (not attached) and runs frames through it with
// BPF_PROG_TEST_RUN; its pins live under a name of the test's own and go in TearDown.
#pragma once

#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/packet_builder.h"
#include "controller/xdp_limiter.h"
#include "kernel/pins.h"
#include "kernel/xdp_program.h"

namespace floodgate::test {

class XdpProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "loading BPF programs needs root";
    static int serial = 0;
    pin_name_ = "bpftest-" + std::to_string(getpid()) + "-" + std::to_string(serial++);
  }

  void TearDown() override {
    loaded_.reset();
    if (!pin_name_.empty()) (void)removePins(pin_name_);
  }

  // A per-source rule: `pps` packets per second with a burst of `burst`.
  static RuleSpec sourceRule(uint64_t pps, uint64_t burst) {
    RuleSpec rule;
    rule.limit.pps = pps;
    rule.limit.burst = burst;
    return rule;
  }

  // A UDP frame to port 53 from `src` (IPv4 or IPv6).
  static std::vector<uint8_t> udpFrom(const std::string& src, size_t payload = 32) {
    PacketBuilder builder;
    builder.eth();
    if (src.find(':') != std::string::npos) {
      builder.ipv6(src, "2001:db8:ffff::1");
    } else {
      builder.ipv4(src, "198.51.100.1");
    }
    return builder.udp(53).payload(payload).build();
  }

  // Names rules rule0, rule1, ... unless they have a name of their own.
  static std::vector<RuleSpec> named(std::vector<RuleSpec> rules) {
    for (size_t i = 0; i < rules.size(); ++i) {
      if (rules[i].name == "default") rules[i].name = "rule" + std::to_string(i);
    }
    return rules;
  }

  // Whether this run tests the program for kernels without may_goto (its rule walk a
  // bpf_loop): tests/bpf/CMakeLists.txt runs the rule-walk tests again with the variable set.
  static bool olderProgramUnderTest() {
    return std::getenv("FLOODGATE_TEST_OLDER_PROGRAM") != nullptr;
  }

  // Loads the program with `rules` and `options`' settings.
  void load(std::vector<RuleSpec> rules, AttachOptions options = {}) {
    options.interface = pin_name_;
    options.test_older_program = options.test_older_program || olderProgramUnderTest();
    options.rules = named(std::move(rules));
    if (options.table_slots == FG_DEFAULT_TABLE_SLOTS) options.table_slots = 1024;
    auto loaded = XdpLimiter::load(options);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    loaded_.emplace(std::move(*loaded));
    // The loader falls back to floodgate_older when the kernel refuses floodgate_xdp (too
    // many states for its verifier, say): then every test would pass on the wrong program.
    const bool older = options.test_older_program || !kernelHasMayGoto();
    ASSERT_EQ(loadedProgramName(), older ? "floodgate_older" : "floodgate_xdp")
        << "the kernel refused the program for it, and the loader fell back";
  }

  // The name of the program loaded: floodgate_xdp or floodgate_older.
  std::string loadedProgramName() {
    bpf_prog_info info{};
    uint32_t size = sizeof(info);
    EXPECT_EQ(bpf_obj_get_info_by_fd(loaded_->programFd(), &info, &size), 0);
    return info.name;
  }

  XdpLimiter& limiter() { return loaded_->limiter; }

  // The program's clock, for a program loaded with options.test_clock_hz: it reads
  // `jiffies` until the next call, however long the runs take.
  void setClock(uint64_t jiffies) { loaded_->setTestJiffies(jiffies); }

  // Replaces the rules as `floodgate reload` does (state kept by rule name).
  void reload(std::vector<RuleSpec> rules, AttachOptions options = {}) {
    options.interface = pin_name_;
    options.rules = named(std::move(rules));
    Status status = limiter().reload(options);
    ASSERT_TRUE(status.ok()) << status.error().message;
  }

  // Runs one frame; returns the XDP action (XDP_PASS, XDP_DROP).
  int run(const std::vector<uint8_t>& frame) {
    LIBBPF_OPTS(bpf_test_run_opts, opts);
    opts.data_in = frame.data();
    opts.data_size_in = static_cast<uint32_t>(frame.size());
    opts.repeat = 1;
    int err = bpf_prog_test_run_opts(loaded_->programFd(), &opts);
    EXPECT_EQ(err, 0) << "BPF_PROG_TEST_RUN failed: " << strerror(errno);
    return static_cast<int>(opts.retval);
  }

  // Runs `frame` `times` times; returns how many passed.
  int passes(const std::vector<uint8_t>& frame, int times) {
    int passed = 0;
    for (int i = 0; i < times; ++i) passed += run(frame) == XDP_PASS;
    return passed;
  }

  // Packets counted for (verdict, reason).
  uint64_t counted(uint32_t verdict, uint32_t reason) {
    auto rows = limiter().counters();
    EXPECT_TRUE(rows.ok());
    for (const CounterRow& row : *rows) {
      if (row.verdict == verdict && row.reason == reason) return row.packets;
    }
    return 0;
  }

  std::string pin_name_;
  std::optional<LoadedXdpLimiter> loaded_;
};

}  // namespace floodgate::test
