// SPDX-License-Identifier: MIT
// `floodgate attach IFACE`: flags of the simple one-rule case, then Limiter::attach.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/config_loading.h"
#include "common/units.h"
#include "controller/limiter.h"
#include "controller/rule_compiler.h"

namespace floodgate::cli {
namespace {

struct AttachFlags {
  std::string interface;
  std::string rate, burst, bps, burst_bytes;
  int ipv4_prefix = 32;
  int ipv6_prefix = 64;
  std::string mode = "auto";
  bool monitor = false;
  bool replace = false;
  std::string table_size = "262144";
  std::string malformed = "drop";
  std::string fragments = "pass";
  std::string unknown_ext = "drop";
  std::string config;
};

FramePolicy policyOf(const std::string& text) {
  return text == "drop" ? FramePolicy::kDrop : FramePolicy::kPass;
}

Result<AttachOptions> toOptions(const AttachFlags& flags) {
  if (!flags.config.empty()) {
    if (!flags.rate.empty() || !flags.bps.empty() || !flags.burst.empty() || !flags.burst_bytes.empty()) {
      return Error::usage("--config sets the rules: drop --rate, --burst, --bps and --burst-bytes");
    }
    auto options = optionsFromConfig(flags.config, flags.interface);
    if (!options) return options.error();
    options->replace = flags.replace;
    if (flags.monitor) options->monitor = true;
    if (flags.mode != "auto") {
      options->mode = flags.mode == "native" ? XdpMode::kNative : XdpMode::kGeneric;
    }
    return options;
  }
  AttachOptions options;
  options.interface = flags.interface;
  options.mode = flags.mode == "native"    ? XdpMode::kNative
                 : flags.mode == "generic" ? XdpMode::kGeneric
                                           : XdpMode::kAuto;
  options.monitor = flags.monitor;
  options.replace = flags.replace;
  options.malformed = policyOf(flags.malformed);
  options.fragments = policyOf(flags.fragments);
  options.unknown_ext = policyOf(flags.unknown_ext);
  auto slots = parseCount(flags.table_size);
  if (!slots) return slots.error();
  if (*slots > (1u << 26)) return Error::usage("--table-size is at most 64M slots");
  options.table_slots = static_cast<uint32_t>(*slots);

  RuleSpec rule;
  rule.ipv4_prefix = static_cast<uint8_t>(flags.ipv4_prefix);
  rule.ipv6_prefix = static_cast<uint8_t>(flags.ipv6_prefix);
  if (flags.rate.empty() && flags.bps.empty()) {
    return Error::usage("give a limit: --rate PPS and/or --bps RATE (e.g. --rate 10k)");
  }
  if (!flags.rate.empty()) {
    auto pps = parseCount(flags.rate);
    if (!pps) return pps.error();
    rule.limit.pps = *pps;
    rule.limit.burst = defaultBurst(*pps);
    if (!flags.burst.empty()) {
      auto burst = parseCount(flags.burst);
      if (!burst) return burst.error();
      rule.limit.burst = *burst;
    }
  } else if (!flags.burst.empty()) {
    return Error::usage("--burst goes with --rate");
  }
  if (!flags.bps.empty()) {
    auto bits = parseBitRate(flags.bps);
    if (!bits) return bits.error();
    rule.limit.bits_per_s = *bits;
    rule.limit.burst_bytes = defaultBurstBytes(*bits);
    if (!flags.burst_bytes.empty()) {
      auto bytes = parseBytes(flags.burst_bytes);
      if (!bytes) return bytes.error();
      rule.limit.burst_bytes = *bytes;
    }
  } else if (!flags.burst_bytes.empty()) {
    return Error::usage("--burst-bytes goes with --bps");
  }
  options.rules.push_back(rule);
  return options;
}

}  // namespace

void addAttachCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<AttachFlags>();
  CLI::App* cmd = app.add_subcommand("attach", "Load the limiter and attach it to an interface");
  addInterfaceArgument(cmd, flags->interface, "Interface to protect, e.g. eth0")->required();
  cmd->add_option("--config", flags->config, "Take rules, lists and policies from floodgate.yaml");
  cmd->add_option("--rate", flags->rate, "Packets per second per source (10k, 1.5M)");
  cmd->add_option("--burst", flags->burst, "Packets a source may send at once (default rate/10)");
  cmd->add_option("--bps", flags->bps, "Bits per second per source (100Mbit, 1Gbit)");
  cmd->add_option("--burst-bytes", flags->burst_bytes,
                  "Bytes a source may send at once (default bps/80, at least 1518)");
  cmd->add_option("--ipv4-prefix", flags->ipv4_prefix, "IPv4 sources share a bucket per /N")
      ->check(CLI::Range(1, 32));
  cmd->add_option("--ipv6-prefix", flags->ipv6_prefix, "IPv6 sources share a bucket per /N")
      ->check(CLI::Range(1, 128));
  cmd->add_option("--mode", flags->mode, "XDP mode: auto tries native, then generic")
      ->check(CLI::IsMember({"auto", "native", "generic"}));
  cmd->add_flag("--monitor", flags->monitor, "Count what would be dropped, drop nothing");
  cmd->add_flag("--replace", flags->replace, "Swap the program of an attached limiter, keep state");
  cmd->add_option("--table-size", flags->table_size, "Source table slots, a power of two (262144)");
  cmd->add_option("--malformed", flags->malformed, "Frames that do not parse: drop or pass")
      ->check(CLI::IsMember({"pass", "drop"}));
  cmd->add_option("--fragments", flags->fragments, "Non-first fragments: pass or drop")
      ->check(CLI::IsMember({"pass", "drop"}));
  cmd->add_option("--unknown-ipv6-ext", flags->unknown_ext,
                  "IPv6 extension chains past 16 headers or of unknown types: drop or pass")
      ->check(CLI::IsMember({"pass", "drop"}));
  cmd->callback([flags, &selected] {
    selected = [flags]() -> Status {
      auto options = toOptions(*flags);
      if (!options) return options.error();
      auto report = Limiter::attach(*options);
      if (!report) return report.error();
      for (const std::string& warning : report->warnings) {
        std::cerr << "floodgate: warning: " << warning << "\n";
      }
      std::cout << (report->replaced ? "replaced" : "attached") << " floodgate on "
                << flags->interface << " (" << xdpModeName(report->mode) << " mode"
                << (flags->monitor ? ", monitor only" : "") << ")\n";
      return okStatus();
    };
  });
}

}  // namespace floodgate::cli
