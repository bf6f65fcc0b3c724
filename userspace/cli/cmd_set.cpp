// SPDX-License-Identifier: MIT
// `floodgate set IFACE RULE --pps N --burst N --bps RATE --burst-bytes N`: one rule's
// thresholds, changed live; its buckets keep their state.
#include <iostream>
#include <memory>
#include <tuple>

#include "cli/commands.h"
#include "controller/rule_compiler.h"
#include "controller/xdp_limiter.h"
#include "floodgate/common/units.h"
#include "kernel/system.h"

namespace floodgate::cli {
namespace {

struct SetFlags {
  std::string interface, rule, pps, burst, bps, burst_bytes;
};

Result<LimitChange> toChange(const SetFlags& flags) {
  LimitChange change;
  auto take = [](const std::string& text, auto parse, std::optional<uint64_t>& out) -> Status {
    if (text.empty()) return okStatus();
    auto value = parse(text);
    if (!value) return value.error();
    out = *value;
    return okStatus();
  };
  for (Status s :
       {take(flags.pps, parseCount, change.pps), take(flags.burst, parseCount, change.burst),
        take(flags.bps, parseBitRate, change.bits_per_s),
        take(flags.burst_bytes, parseBytes, change.burst_bytes)}) {
    if (!s) return s.error();
  }
  if (!change.pps && !change.burst && !change.bits_per_s && !change.burst_bytes) {
    return Error::usage("nothing to set: give --pps, --burst, --bps and/or --burst-bytes");
  }
  return change;
}

Status setRule(const SetFlags& flags) {
  auto change = toChange(flags);
  if (!change) return change.error();
  if (Status s = checkPrivileges(); !s) return s;
  auto limiter = XdpLimiter::open(flags.interface);
  if (!limiter) return limiter.error();
  auto rules = limiter->activeRules();
  if (!rules) return rules.error();
  bool token_bucket = false;
  for (const fg_rule& rule : *rules) {
    if (flags.rule != rule.name) continue;
    token_bucket = rule.algorithm == FG_ALG_TOKEN_BUCKET;
    if (!token_bucket && (change->burst || change->burst_bytes)) {
      return Error::usage("rule '" + flags.rule +
                          "' limits by window, which has no burst (a window admits rate x "
                          "window): set its rate only (--pps, --bps)");
    }
  }
  if (Status s = limiter->setLimits(flags.rule, *change); !s) return s;
  // a window's rate is a count a window, which runs as written
  for (auto [rate, bits, flag] :
       {std::tuple{change->pps, false, "--pps"}, std::tuple{change->bits_per_s, true, "--bps"}}) {
    if (!rate || !token_bucket) continue;
    if (auto note = coarseRateNote(*rate, bits)) {
      std::cerr << "floodgate: warning: " << flag << " " << *note << "\n";
    }
  }
  std::cout << "set " << flags.rule << " on " << flags.interface << "\n";
  return okStatus();
}

}  // namespace

void addSetCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<SetFlags>();
  CLI::App* cmd = app.add_subcommand("set", "Change one rule's thresholds live, keeping its state");
  addInterfaceArgument(cmd, flags->interface, "Interface")->required();
  cmd->add_option("rule", flags->rule, "Rule name (see 'floodgate status')")->required();
  cmd->add_option("--pps", flags->pps, "Packets per second (10k)");
  cmd->add_option("--burst", flags->burst, "Burst in packets");
  cmd->add_option("--bps", flags->bps, "Bits per second (1Gbit)");
  cmd->add_option("--burst-bytes", flags->burst_bytes, "Burst in bytes");
  cmd->callback([flags, &selected] { selected = [flags] { return setRule(*flags); }; });
}

}  // namespace floodgate::cli
