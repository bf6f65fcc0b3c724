// SPDX-License-Identifier: MIT
// Unit tests of the attach command line as options: `--replace` keeps every setting it was
// not given, and refuses what it would lose.
#include "controller/attach_request.h"

#include <gtest/gtest.h>

#include <cstring>

#include "controller/rule_compiler.h"

namespace floodgate {
namespace {

fg_rule compiled(const RuleSpec& spec) {
  auto rule = compileRule(spec);
  EXPECT_TRUE(rule.ok()) << rule.error().message;
  return *rule;
}

// A limiter attached with `--rate 100 --burst 10 --bps 1Mbit --ipv4-prefix 24 --monitor
// --table-size 4096 --malformed pass --fragments drop`.
XdpLimiterStatus runningFromCommandLine() {
  XdpLimiterStatus running;
  running.interface = "eth0";
  running.mode = "native";
  running.monitor = true;
  running.table_slots = 4096;
  running.list_max_entries = 1024;
  running.settings.malformed_policy = FG_POLICY_PASS;
  running.settings.fragment_policy = FG_POLICY_DROP;
  running.settings.unknown_ext_policy = FG_POLICY_DROP;
  running.settings.link_control = *compileLinkControl({50, 200});  // a config's, kept
  RuleSpec spec;
  spec.limit = {100, 10, 1'000'000, 20'000};
  spec.ipv4_prefix = 24;
  running.rules.push_back(compiled(spec));
  return running;
}

TEST(ReplaceAttachOptions, ARateAloneKeepsTheBitRateThePrefixesAndEverySetting) {
  AttachRequest request;
  request.interface = "eth0";
  request.limit.pps = 10;
  request.limit.burst = defaultBurst(10);
  auto options = replaceAttachOptions(request, runningFromCommandLine());
  ASSERT_TRUE(options.ok()) << options.error().message;
  EXPECT_TRUE(options->replace);
  EXPECT_FALSE(options->keep_rules);
  ASSERT_EQ(options->rules.size(), 1u);
  const RuleSpec& rule = options->rules[0];
  EXPECT_EQ(rule.name, "default");
  EXPECT_EQ(rule.limit.pps, 10u);
  EXPECT_EQ(rule.limit.burst, defaultBurst(10));
  EXPECT_EQ(rule.limit.bits_per_s, 1'000'000u);
  EXPECT_EQ(rule.limit.burst_bytes, 20'000u);
  EXPECT_EQ(rule.ipv4_prefix, 24);
  EXPECT_EQ(rule.ipv6_prefix, 64);
  EXPECT_TRUE(options->monitor);
  EXPECT_EQ(options->table_slots, 4096u);
  EXPECT_EQ(options->list_max_entries, 1024u);
  EXPECT_EQ(options->malformed, FramePolicy::kPass);
  EXPECT_EQ(options->fragments, FramePolicy::kDrop);
  EXPECT_EQ(options->unknown_ext, FramePolicy::kDrop);
  EXPECT_EQ(options->link_control, (LinkControlBudget{50, 200}));
  EXPECT_EQ(options->mode, XdpMode::kAuto) << "auto: the running mode stays";
}

TEST(ReplaceAttachOptions, WhatIsGivenChangesAndNothingGivenKeepsTheRules) {
  AttachRequest request;
  request.interface = "eth0";
  request.monitor = false;  // --no-monitor
  request.fragments = FramePolicy::kPass;
  request.mode = XdpMode::kGeneric;
  request.link_control = LinkControlBudget{0, 0};  // --link-control unlimited
  auto options = replaceAttachOptions(request, runningFromCommandLine());
  ASSERT_TRUE(options.ok()) << options.error().message;
  EXPECT_TRUE(options->keep_rules);
  EXPECT_TRUE(options->rules.empty());
  EXPECT_FALSE(options->monitor);
  EXPECT_EQ(options->fragments, FramePolicy::kPass);
  EXPECT_EQ(options->malformed, FramePolicy::kPass);
  EXPECT_EQ(options->link_control, (LinkControlBudget{0, 0}));
  EXPECT_EQ(options->mode, XdpMode::kGeneric) << "the limiter refuses a mode it cannot change";
}

TEST(ReplaceAttachOptions, LimitsForAConfigsRulesAreRefusedNamingWhatWouldBeLost) {
  XdpLimiterStatus running = runningFromCommandLine();
  RuleSpec dns;
  dns.name = "dns";
  dns.protocol = Protocol::kUdp;
  dns.dst_ports = {{53, 53}};
  dns.limit.pps = 100;
  dns.limit.burst = 10;
  running.rules.push_back(compiled(dns));
  AttachRequest request;
  request.interface = "eth0";
  request.limit.pps = 10;
  request.limit.burst = 1;
  auto options = replaceAttachOptions(request, running);
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.error().kind, ErrorKind::kUsage);
  EXPECT_NE(options.error().message.find("'default', 'dns'"), std::string::npos)
      << options.error().message;
  EXPECT_NE(options.error().message.find("floodgate set eth0"), std::string::npos);

  running.rules.erase(running.rules.begin());  // one rule, but a config's
  auto one = replaceAttachOptions(request, running);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.error().message.find("'dns'"), std::string::npos) << one.error().message;
}

TEST(FreshAttachOptions, DefaultsForWhatIsNotGiven) {
  AttachRequest request;
  request.interface = "eth0";
  request.limit.bits_per_s = 8'000'000;
  request.limit.burst_bytes = defaultBurstBytes(8'000'000);
  auto options = freshAttachOptions(request);
  ASSERT_TRUE(options.ok()) << options.error().message;
  AttachOptions defaults;
  EXPECT_EQ(options->table_slots, defaults.table_slots);
  EXPECT_EQ(options->malformed, defaults.malformed);
  EXPECT_EQ(options->fragments, defaults.fragments);
  EXPECT_EQ(options->link_control, (LinkControlBudget{1000, 1000}));
  EXPECT_FALSE(options->monitor);
  ASSERT_EQ(options->rules.size(), 1u);
  EXPECT_EQ(options->rules[0].limit.pps, 0u);
  EXPECT_EQ(options->rules[0].ipv4_prefix, 32);
  request.link_control =
      LinkControlBudget{5000, 200};  // --link-control 5k --link-control-burst 200
  EXPECT_EQ(freshAttachOptions(request)->link_control, (LinkControlBudget{5000, 200}));
  request.limit = {};
  EXPECT_FALSE(freshAttachOptions(request).ok()) << "a fresh attach needs a limit";
}

}  // namespace
}  // namespace floodgate
