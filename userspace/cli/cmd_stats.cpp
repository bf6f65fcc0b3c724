// SPDX-License-Identifier: MIT
// `floodgate stats IFACE [--json]`: packet and byte counters by verdict and reason.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "common/json_text.h"
#include "controller/status_views.h"
#include "controller/xdp_limiter.h"
#include "kernel/system.h"

namespace floodgate::cli {
namespace {

struct StatsFlags {
  std::string interface;
  bool json = false;
};

Status showStats(const StatsFlags& flags) {
  if (Status s = checkPrivileges(); !s) return s;
  auto limiter = XdpLimiter::open(flags.interface);
  if (!limiter) return limiter.error();
  auto rows = limiter->counters();
  if (!rows) return rows.error();
  auto rules = limiter->ruleCounters();
  if (!rules) return rules.error();
  auto link_control_over = limiter->linkControlOverBudget();
  if (!link_control_over) return link_control_over.error();
  if (flags.json) {
    std::cout << jsonText(statsJson(flags.interface, *rows, *rules, *link_control_over)) << "\n";
  } else {
    std::cout << statsText(flags.interface, *rows, *rules, *link_control_over);
  }
  return okStatus();
}

}  // namespace

void addStatsCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<StatsFlags>();
  CLI::App* cmd = app.add_subcommand("stats", "Show packet and byte counters");
  addInterfaceArgument(cmd, flags->interface, "Interface")->required();
  cmd->add_flag("--json", flags->json, "Machine-readable output");
  cmd->callback([flags, &selected] { selected = [flags] { return showStats(*flags); }; });
}

}  // namespace floodgate::cli
