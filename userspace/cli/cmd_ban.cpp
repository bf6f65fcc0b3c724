// SPDX-License-Identifier: MIT
// `floodgate ban add|del|list IFACE`: bans of a running limiter, with the time they have left;
// `ban add --config` also publishes them to the fleet (fleet.bans), `ban del --config` their
// lifts.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "common/json_text.h"
#include "config/floodgate_config.h"
#include "controller/xdp_limiter.h"
#include "daemon/fleet_bans.h"
#include "floodgate/common/cidr.h"
#include "floodgate/common/units.h"
#include "kernel/system.h"

namespace floodgate::cli {
namespace {

struct BanFlags {
  std::string interface;
  std::vector<std::string> cidrs;
  std::string duration;  // empty: until removed
  std::string config;    // ban add, ban del: share through this file's fleet.bans
  bool json = false;
};

// The fleet.bans of `file`, when the bans of `cidrs` are to be shared; an error before
// anything is banned when the file is not valid, does not share manual bans of this length,
// or names a prefix every host refuses (wider than widest_ipv4/_ipv6, loopback, link-local,
// multicast). What hosts refuse by their own config (an allow list, proxies, Redis servers)
// is said of this file's as a warning: other hosts' configs may differ.
Result<std::optional<config::FleetBansConfig>> fleetBansToShare(const std::string& file,
                                                                uint64_t duration_ns,
                                                                const std::vector<Cidr>& cidrs) {
  if (file.empty()) return std::optional<config::FleetBansConfig>();
  auto config = config::loadValidConfig(file);
  if (!config) return config.error();
  const config::FleetBansConfig& fleet = config->fleet_bans;
  if (!fleet.enabled) {
    return Error::usage("--config: " + file + " has no fleet.bans to share the ban through");
  }
  if (Status s = daemon::fleetShares(fleet, report::BanKind::kManual, duration_ns); !s) {
    return Error::usage("--config: " + s.error().message);
  }
  const http::HttpConfig* http = config->http ? &*config->http : nullptr;
  const daemon::EscalationRules taken =
      daemon::escalationRules(config->allow.value_or(std::vector<Cidr>{}), http);
  const std::vector<Cidr> none;
  const daemon::FleetBanRules everywhere{
      fleet.secret, fleet.max_ban_ns, fleet.widest_ipv4, fleet.widest_ipv6, none, none, none};
  daemon::FleetBanRules here = everywhere;
  here.allow = taken.allow;
  here.trusted_proxies = taken.trusted_proxies;
  here.services = daemon::serviceAddresses(fleet.redis, http);
  for (const Cidr& cidr : cidrs) {
    if (auto result = daemon::fleetBanAddressResult(cidr, everywhere, {});
        result != metrics::kFleetBanApplied) {
      return Error::usage("--config: a ban of " + cidr.toString() +
                          " is not shared: every host refuses it (" +
                          metrics::kFleetBanResultNames[result] +
                          "); without --config it is banned on this host alone");
    }
    if (auto result = daemon::fleetBanAddressResult(cidr, here, {});
        result != metrics::kFleetBanApplied) {
      std::cerr << "warning: hosts running " << file << " do not apply the ban of "
                << cidr.toString() << " (" << metrics::kFleetBanResultNames[result]
                << "); it is shared for the others\n";
    }
  }
  return std::optional<config::FleetBansConfig>(fleet);
}

// The fleet.bans of `file`, when the lifts of `cidrs` are to be shared; an error before
// anything is lifted when the file is not valid or no host would take one of them.
Result<std::optional<config::FleetBansConfig>> fleetBansToLift(const std::string& file,
                                                               const std::vector<Cidr>& cidrs) {
  if (file.empty()) return std::optional<config::FleetBansConfig>();
  auto config = config::loadValidConfig(file);
  if (!config) return config.error();
  if (!config->fleet_bans.enabled) {
    return Error::usage("--config: " + file + " has no fleet.bans to share the lift through");
  }
  for (const Cidr& cidr : cidrs) {
    if (Status s = daemon::fleetLifts(config->fleet_bans, cidr); !s) {
      return Error::usage("--config: " + s.error().message);
    }
  }
  return std::optional<config::FleetBansConfig>(config->fleet_bans);
}

// The CIDRs named on the command line, an IPv4-mapped one (::ffff:a.b.c.d) as the IPv4 one its
// packets carry, said on stderr: what a report or a fleet record naming it bans or lifts too.
Result<std::vector<Cidr>> banCidrs(const std::vector<std::string>& texts) {
  auto cidrs = parseCidrs(texts);
  if (!cidrs) return cidrs.error();
  for (Cidr& cidr : *cidrs) {
    if (std::optional<Cidr> v4 = mappedIpv4(cidr)) {
      std::cerr << "note: " << cidr.toString() << " is IPv4-mapped; no packet carries it: taken as "
                << v4->toString() << "\n";
      cidr = *v4;
    }
  }
  return cidrs;
}

Result<XdpLimiter> openXdpLimiter(const std::string& interface) {
  if (Status s = checkPrivileges(); !s) return s.error();
  return XdpLimiter::open(interface);
}

Status addBans(const BanFlags& flags) {
  uint64_t duration_ns = 0;
  if (!flags.duration.empty()) {
    auto parsed = parseDuration(flags.duration);
    if (!parsed) return Error::usage("--for: " + parsed.error().message);
    if (*parsed > kMaxBanNs) {
      return Error::usage(
          "--for is at most 30d: a source to keep out for longer belongs on "
          "the deny list (floodgate deny add)");
    }
    duration_ns = *parsed;
  }
  auto cidrs = banCidrs(flags.cidrs);
  if (!cidrs) return cidrs.error();
  // said before the ban: one of every source also cuts off the session that typed it
  for (const std::string& warning : config::cidrWarnings(*cidrs, "this ban", "drops")) {
    std::cerr << "warning: " << warning << "\n";
  }
  auto fleet = fleetBansToShare(flags.config, duration_ns, *cidrs);
  if (!fleet) return fleet.error();
  auto limiter = openXdpLimiter(flags.interface);
  if (!limiter) return limiter.error();
  std::vector<report::BanRecord> shared;
  Status banned = okStatus();
  size_t made = 0;
  for (const Cidr& cidr : *cidrs) {
    if (banned = limiter->banAdd(cidr, duration_ns); !banned) break;
    ++made;
    if (*fleet)
      shared.push_back(daemon::fleetBanRecord(cidr, duration_ns, report::BanKind::kManual));
    std::cout
        << "banned " << cidr.toString() << " on "
        << flags
               .interface << (duration_ns ? " for " + formatDuration(duration_ns) : std::string(" until removed"))
        << "\n";
  }
  // the bans made before a failure are shared all the same: the fleet is not left behind
  // this host by a table that filled halfway through the list
  if (*fleet && !shared.empty()) {
    if (Status s = daemon::publishFleetBans(**fleet, shared); !s) {
      return banned ? s : Error::failure(banned.error().message + "; " + s.error().message);
    }
    std::cout << "shared with the fleet through redis stream " << (*fleet)->stream << "\n";
  }
  if (!banned) {
    return Error::failure(banned.error().message + " (" + std::to_string(made) + " of " +
                          std::to_string(cidrs->size()) + " banned before it" +
                          (*fleet && made ? ", and shared)" : ")"));
  }
  return okStatus();
}

Status removeBans(const BanFlags& flags) {
  auto cidrs = banCidrs(flags.cidrs);
  if (!cidrs) return cidrs.error();
  auto fleet = fleetBansToLift(flags.config, *cidrs);
  if (!fleet) return fleet.error();
  auto limiter = openXdpLimiter(flags.interface);
  if (!limiter) return limiter.error();
  return daemon::liftBans(
      *fleet ? &**fleet : nullptr, *cidrs,
      [&](const Cidr& cidr) { return limiter->banRemove(cidr); }, std::cout);
}

Status listBans(const BanFlags& flags) {
  auto limiter = openXdpLimiter(flags.interface);
  if (!limiter) return limiter.error();
  auto bans = limiter->bans();
  if (!bans) return bans.error();
  if (flags.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const BanEntry& ban : *bans) {
      nlohmann::json entry{{"cidr", ban.cidr.toString()}, {"by", ban.by}};
      entry["seconds_left"] =
          ban.forever ? nlohmann::json(nullptr) : nlohmann::json(ban.remaining_ns / 1000000000.0);
      out.push_back(entry);
    }
    std::cout << jsonText({{"interface", flags.interface}, {"bans", out}}) << "\n";
    return okStatus();
  }
  std::printf("%-40s %-12s %s\n", "banned", "time left", "by");
  for (const BanEntry& ban : *bans) {
    std::string left =
        ban.forever ? "until removed" : std::to_string(ban.remaining_ns / 1000000000ULL) + "s";
    std::printf("%-40s %-12s %s\n", ban.cidr.toString().c_str(), left.c_str(), ban.by.c_str());
  }
  return okStatus();
}

}  // namespace

void addBanCommand(CLI::App& app, Action& selected) {
  CLI::App* ban = app.add_subcommand("ban", "Ban sources for a while, or list the bans");
  ban->require_subcommand(1);

  auto add = std::make_shared<BanFlags>();
  CLI::App* add_cmd = ban->add_subcommand("add", "Ban addresses or CIDRs");
  addInterfaceArgument(add_cmd, add->interface, "Interface")->required();
  add_cmd->add_option("cidrs", add->cidrs, "Addresses or CIDRs")->required();
  add_cmd->add_option("--for", add->duration, "How long (30s, 10m, 1h); default until removed");
  add_cmd->add_option(
      "--config", add->config,
      "floodgate.yaml whose fleet.bans shares the ban with the fleet (needs --for)");
  add_cmd->callback([add, &selected] { selected = [add] { return addBans(*add); }; });

  auto del = std::make_shared<BanFlags>();
  CLI::App* del_cmd = ban->add_subcommand("del", "Lift bans");
  addInterfaceArgument(del_cmd, del->interface, "Interface")->required();
  del_cmd->add_option("cidrs", del->cidrs, "Addresses or CIDRs as they were banned")->required();
  del_cmd->add_option(
      "--config", del->config,
      "floodgate.yaml whose fleet.bans lifts the bans on every host of the fleet too");
  del_cmd->callback([del, &selected] { selected = [del] { return removeBans(*del); }; });

  auto list = std::make_shared<BanFlags>();
  CLI::App* list_cmd = ban->add_subcommand("list", "Show the bans and the time they have left");
  addInterfaceArgument(list_cmd, list->interface, "Interface")->required();
  list_cmd->add_flag("--json", list->json, "Machine-readable output");
  list_cmd->callback([list, &selected] { selected = [list] { return listBans(*list); }; });
}

}  // namespace floodgate::cli
