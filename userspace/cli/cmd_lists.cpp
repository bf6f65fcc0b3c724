// SPDX-License-Identifier: MIT
// `floodgate allow|deny add|del|list IFACE [CIDR...]`: the lists of a running limiter.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/json_text.h"
#include "config/floodgate_config.h"
#include "controller/xdp_limiter.h"
#include "floodgate/common/cidr.h"
#include "kernel/system.h"

namespace floodgate::cli {
namespace {

struct ListFlags {
  std::string interface;
  std::vector<std::string> cidrs;
  bool json = false;
};

Status change(ListKind kind, bool add, const ListFlags& flags) {
  auto cidrs = parseCidrs(flags.cidrs);
  if (!cidrs) return cidrs.error();
  if (Status s = checkPrivileges(); !s) return s;
  auto limiter = XdpLimiter::open(flags.interface);
  if (!limiter) return limiter.error();
  if (add) {
    const char* verb = kind == ListKind::kAllow ? "lets through, unlimited," : "drops";
    for (const std::string& warning :
         config::cidrWarnings(*cidrs, std::string("the ") + listKindName(kind) + " list", verb)) {
      std::cerr << "warning: " << warning << "\n";
    }
  }
  auto changed = add ? limiter->listAdd(kind, *cidrs) : limiter->listRemove(kind, *cidrs);
  if (!changed) return changed.error();
  std::cout << (add ? "added " : "removed ") << *changed << " of " << cidrs->size() << " to "
            << listKindName(kind) << " list of " << flags.interface << "\n";
  return okStatus();
}

Status show(ListKind kind, const ListFlags& flags) {
  if (Status s = checkPrivileges(); !s) return s;
  auto limiter = XdpLimiter::open(flags.interface);
  if (!limiter) return limiter.error();
  auto entries = limiter->listEntries(kind);
  if (!entries) return entries.error();
  if (flags.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const Cidr& cidr : *entries) out.push_back(cidr.toString());
    std::cout << jsonText({{"interface", flags.interface}, {listKindName(kind), out}}) << "\n";
  } else {
    for (const Cidr& cidr : *entries) std::cout << cidr.toString() << "\n";
  }
  return okStatus();
}

void addList(CLI::App& app, Action& selected, ListKind kind, const char* help) {
  CLI::App* list = app.add_subcommand(listKindName(kind), help);
  list->require_subcommand(1);
  for (const char* verb : {"add", "del", "list"}) {
    auto flags = std::make_shared<ListFlags>();
    std::string what = verb;
    CLI::App* cmd = list->add_subcommand(verb, what == "add"   ? "Add CIDRs"
                                               : what == "del" ? "Remove CIDRs"
                                                               : "Show the entries");
    addInterfaceArgument(cmd, flags->interface, "Interface")->required();
    if (what == "list") {
      cmd->add_flag("--json", flags->json, "Machine-readable output");
    } else {
      cmd->add_option("cidrs", flags->cidrs, "Addresses or CIDRs")->required();
    }
    cmd->callback([flags, what, kind, &selected] {
      selected = [flags, what, kind]() -> Status {
        if (what == "list") return show(kind, *flags);
        return change(kind, what == "add", *flags);
      };
    });
  }
}

}  // namespace

void addListCommands(CLI::App& app, Action& selected) {
  addList(app, selected, ListKind::kAllow, "Sources that bypass every limit");
  addList(app, selected, ListKind::kDeny, "Sources that are always dropped");
}

}  // namespace floodgate::cli
