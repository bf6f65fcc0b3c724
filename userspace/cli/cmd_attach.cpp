// SPDX-License-Identifier: MIT
// `floodgate attach IFACE`: flags of the simple one-rule case, then XdpLimiter::attach.
#include <iostream>
#include <memory>
#include <optional>
#include <tuple>

#include "cli/commands.h"
#include "cli/config_loading.h"
#include "controller/attach_request.h"
#include "controller/rule_compiler.h"
#include "controller/xdp_limiter.h"
#include "floodgate/common/units.h"

namespace floodgate::cli {
namespace {

// Flags with a default are left unset here when not given: --replace keeps the running
// limiter's value for them, a fresh attach takes the default.
struct AttachFlags {
  std::string interface;
  std::string rate, burst, bps, burst_bytes;
  std::optional<int> ipv4_prefix, ipv6_prefix;
  std::string mode = "auto";
  bool monitor = false;
  CLI::Option* monitor_flag = nullptr;  // given when it counts --monitor or --no-monitor
  bool replace = false;
  std::optional<std::string> table_size;
  std::optional<std::string> malformed, fragments, unknown_ext;
  std::optional<std::string> link_control, link_control_burst;
  std::string config;
  std::string into_prog_array;
  uint32_t slot = 0;
  CLI::Option* slot_flag = nullptr;
  bool multiprog = false;
};

// Where the program goes (flags that mean the same with or without --config).
Status applyPlacement(const AttachFlags& flags, AttachOptions& options) {
  if (flags.slot_flag->count() > 0 && flags.into_prog_array.empty()) {
    return Error::usage("--slot goes with --into-prog-array");
  }
  if (!flags.into_prog_array.empty()) {
    if (flags.slot_flag->count() == 0) return Error::usage("--into-prog-array needs --slot N");
    options.root_prog_array = flags.into_prog_array;
    options.root_slot = flags.slot;
  }
  options.multiprog = flags.multiprog;
  return okStatus();
}

std::optional<FramePolicy> policyOf(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  return *text == "drop" ? FramePolicy::kDrop : FramePolicy::kPass;
}

XdpMode modeOf(const std::string& text) {
  return text == "native"    ? XdpMode::kNative
         : text == "generic" ? XdpMode::kGeneric
                             : XdpMode::kAuto;
}

// --link-control RATE|unlimited [--link-control-burst N] (the burst a second of the rate).
Result<std::optional<LinkControlBudget>> linkControlOf(const AttachFlags& flags) {
  if (!flags.link_control) {
    if (flags.link_control_burst) {
      return Error::usage("--link-control-burst goes with --link-control");
    }
    return std::optional<LinkControlBudget>();
  }
  if (*flags.link_control == "unlimited") {
    if (flags.link_control_burst) {
      return Error::usage("--link-control unlimited has no burst: drop --link-control-burst");
    }
    return std::optional<LinkControlBudget>(LinkControlBudget{0, 0});
  }
  auto pps = parseCount(*flags.link_control);
  if (!pps) {
    return Error::usage("--link-control: " + pps.error().message + ", or write unlimited");
  }
  LinkControlBudget budget{*pps, *pps};
  if (flags.link_control_burst) {
    auto burst = parseCount(*flags.link_control_burst);
    if (!burst) return Error::usage("--link-control-burst: " + burst.error().message);
    budget.burst = *burst;
  }
  if (auto compiled = compileLinkControl(budget); !compiled) return compiled.error();
  return std::optional<LinkControlBudget>(budget);
}

Result<AttachRequest> toRequest(const AttachFlags& flags) {
  AttachRequest request;
  request.interface = flags.interface;
  request.mode = modeOf(flags.mode);
  if (flags.monitor_flag && flags.monitor_flag->count() > 0) request.monitor = flags.monitor;
  request.malformed = policyOf(flags.malformed);
  request.fragments = policyOf(flags.fragments);
  request.unknown_ext = policyOf(flags.unknown_ext);
  auto link_control = linkControlOf(flags);
  if (!link_control) return link_control.error();
  request.link_control = *link_control;
  if (flags.table_size) {
    auto slots = parseCount(*flags.table_size);
    if (!slots) return slots.error();
    // checked before it narrows to 32 bits; the other limits are validate()'s
    if (*slots > FG_LARGEST_TABLE_SLOTS) {
      return Error::usage("--table-size is at most " +
                          std::to_string(FG_LARGEST_TABLE_SLOTS >> 20) + "M slots");
    }
    request.table_slots = static_cast<uint32_t>(*slots);
  }
  if (flags.ipv4_prefix) request.ipv4_prefix = static_cast<uint8_t>(*flags.ipv4_prefix);
  if (flags.ipv6_prefix) request.ipv6_prefix = static_cast<uint8_t>(*flags.ipv6_prefix);
  if (!flags.rate.empty()) {
    auto pps = parseCount(flags.rate);
    if (!pps) return pps.error();
    request.limit.pps = *pps;
    request.limit.burst = defaultBurst(*pps);
    if (!flags.burst.empty()) {
      auto burst = parseCount(flags.burst);
      if (!burst) return burst.error();
      request.limit.burst = *burst;
    }
  } else if (!flags.burst.empty()) {
    return Error::usage("--burst goes with --rate");
  }
  if (!flags.bps.empty()) {
    auto bits = parseBitRate(flags.bps);
    if (!bits) return bits.error();
    request.limit.bits_per_s = *bits;
    request.limit.burst_bytes = defaultBurstBytes(*bits);
    if (!flags.burst_bytes.empty()) {
      auto bytes = parseBytes(flags.burst_bytes);
      if (!bytes) return bytes.error();
      request.limit.burst_bytes = *bytes;
    }
  } else if (!flags.burst_bytes.empty()) {
    return Error::usage("--burst-bytes goes with --bps");
  }
  return request;
}

Result<AttachOptions> toOptions(const AttachFlags& flags) {
  if (!flags.config.empty()) {
    if (!flags.rate.empty() || !flags.bps.empty() || !flags.burst.empty() ||
        !flags.burst_bytes.empty()) {
      return Error::usage("--config sets the rules: drop --rate, --burst, --bps and --burst-bytes");
    }
    // What the config sets is set there: a flag beside it would otherwise be dropped without
    // a word, and a limiter keyed per /32 where --ipv4-prefix 24 was asked lets a /24 through
    // 256 times over.
    for (auto [given, flag, key] :
         {std::tuple{flags.ipv4_prefix.has_value(), "--ipv4-prefix", "a rule's key.ipv4_prefix"},
          std::tuple{flags.ipv6_prefix.has_value(), "--ipv6-prefix", "a rule's key.ipv6_prefix"},
          std::tuple{flags.table_size.has_value(), "--table-size", "defaults.table_size"},
          std::tuple{flags.malformed.has_value(), "--malformed", "defaults.malformed"},
          std::tuple{flags.fragments.has_value(), "--fragments", "defaults.fragments"},
          std::tuple{flags.unknown_ext.has_value(), "--unknown-ipv6-ext",
                     "defaults.unknown_ipv6_ext"},
          std::tuple{flags.link_control.has_value() || flags.link_control_burst.has_value(),
                     "--link-control", "defaults.link_control"}}) {
      if (given) {
        return Error::usage(std::string("--config sets ") + key + ": drop " + flag +
                            " and set it in the config");
      }
    }
    auto options = optionsFromConfig(flags.config, flags.interface);
    if (!options) return options.error();
    options->replace = flags.replace;
    if (flags.monitor_flag && flags.monitor_flag->count() > 0) options->monitor = flags.monitor;
    if (flags.mode != "auto") options->mode = modeOf(flags.mode);
    if (Status s = applyPlacement(flags, *options); !s) return s.error();
    return options;
  }
  auto request = toRequest(flags);
  if (!request) return request.error();
  auto options = attachOptions(*request, flags.replace);
  if (!options) return options.error();
  if (Status s = applyPlacement(flags, *options); !s) return s.error();
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
  flags->monitor_flag = cmd->add_flag("--monitor,!--no-monitor", flags->monitor,
                                      "Count what would be dropped, drop nothing (or not)");
  cmd->add_flag("--replace", flags->replace,
                "Swap the program of an attached limiter, keep its state and every setting "
                "not given");
  cmd->add_option("--table-size", flags->table_size, "Source table slots, a power of two (262144)");
  cmd->add_option("--malformed", flags->malformed, "Frames that do not parse: drop or pass")
      ->check(CLI::IsMember({"pass", "drop"}));
  cmd->add_option("--fragments", flags->fragments, "Non-first fragments: pass or drop")
      ->check(CLI::IsMember({"pass", "drop"}));
  cmd->add_option("--into-prog-array", flags->into_prog_array,
                  "Go into a slot of this pinned prog array (an operator's root XDP program "
                  "tail-calls it) instead of taking the XDP hook");
  flags->slot_flag = cmd->add_option("--slot", flags->slot, "The slot of --into-prog-array");
  cmd->add_flag("--multiprog", flags->multiprog,
                "Share the hook through libxdp's dispatcher (needs kernel ext programs)");
  cmd->add_option("--link-control", flags->link_control,
                  "IPv6 Neighbour Discovery and MLD from the link that pass by no rule, a "
                  "second (1000), or unlimited; past it they meet the rules");
  cmd->add_option("--link-control-burst", flags->link_control_burst,
                  "How many of them at once (default: a second of --link-control)");
  cmd->add_option("--unknown-ipv6-ext", flags->unknown_ext,
                  "IPv6 extension chains past 16 headers or of unknown types: drop or pass")
      ->check(CLI::IsMember({"pass", "drop"}));
  cmd->callback([flags, &selected] {
    selected = [flags]() -> Status {
      auto options = toOptions(*flags);
      if (!options) return options.error();
      auto report = XdpLimiter::attach(*options);
      if (!report) return report.error();
      for (const std::string& warning : report->warnings) {
        std::cerr << "floodgate: warning: " << warning << "\n";
      }
      // a config's rules were warned of with the config's other warnings
      for (const RuleSpec& rule :
           flags->config.empty() ? options->rules : std::vector<RuleSpec>{}) {
        for (auto [rate, bits, flag] : {std::tuple{rule.limit.pps, false, "--rate"},
                                        std::tuple{rule.limit.bits_per_s, true, "--bps"}}) {
          if (auto note = coarseRateNote(rate, bits)) {
            std::cerr << "floodgate: warning: " << flag << " " << *note << "\n";
          }
        }
      }
      std::cout << (report->replaced ? "replaced" : "attached") << " floodgate on "
                << flags->interface << " ("
                << (report->prog_array_slot.empty()
                        ? std::string(xdpModeName(report->mode)) + " mode"
                        : "in " + report->prog_array_slot)
                << (options->monitor ? ", monitor only" : "") << ")\n";
      return okStatus();
    };
  });
}

}  // namespace floodgate::cli
