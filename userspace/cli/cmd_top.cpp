// SPDX-License-Identifier: MIT
// `floodgate top IFACE [-n 20] [--interval 1s] [--json]`: the sources with the most drops
// right now. On a terminal it refreshes until Ctrl-C; otherwise it prints one ranking.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "common/json_text.h"
#include "controller/top.h"
#include "controller/xdp_limiter.h"
#include "floodgate/common/units.h"
#include "kernel/system.h"

namespace floodgate::cli {
namespace {

struct TopFlags {
  std::string interface;
  size_t rows = 20;
  std::string interval = "1s";
  bool json = false;
};

std::atomic<bool> interrupted{false};

std::string banText(const TopRow& row) {
  if (!row.banned) return "-";
  if (row.ban_forever) return "forever";
  return formatDuration(row.ban_remaining_ns / 1000000000ULL * 1000000000ULL) + " left";
}

std::string topText(const std::string& interface, const std::vector<TopRow>& rows,
                    const std::string& interval) {
  std::ostringstream out;
  char line[256];
  out << "floodgate top " << interface << " (drops and packets a second over " << interval << ")\n";
  std::snprintf(line, sizeof(line), "%-44s %-20s %12s %12s %-8s %s\n", "SOURCE", "RULE", "DROP/S",
                "PKT/S", "STATE", "BAN");
  out << line;
  for (const TopRow& row : rows) {
    std::snprintf(line, sizeof(line), "%-44s %-20s %12.0f %12.0f %-8s %s\n", row.source.c_str(),
                  row.rule.c_str(), row.drops_per_s, row.packets_per_s,
                  row.limited ? "limited" : "ok", banText(row).c_str());
    out << line;
  }
  if (rows.empty()) out << "(no source sent a packet in the interval)\n";
  return out.str();
}

nlohmann::json topJson(const std::string& interface, const std::vector<TopRow>& rows,
                       double seconds) {
  nlohmann::json out = {{"interface", interface}, {"interval_s", seconds}};
  out["rows"] = nlohmann::json::array();
  for (const TopRow& row : rows) {
    nlohmann::json ban = nullptr;
    if (row.banned) {
      ban = {{"forever", row.ban_forever},
             {"remaining_s", static_cast<double>(row.ban_remaining_ns) / 1e9}};
    }
    out["rows"].push_back({{"source", row.source},
                           {"rule", row.rule},
                           {"drops_per_s", row.drops_per_s},
                           {"packets_per_s", row.packets_per_s},
                           {"limited", row.limited},
                           {"ban", ban}});
  }
  return out;
}

// Sleeps `ns`, waking early on Ctrl-C; false when interrupted.
bool pause(uint64_t ns) {
  auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) {
    if (interrupted) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return !interrupted;
}

Status showTop(const TopFlags& flags) {
  auto interval_ns = parseDuration(flags.interval);
  if (!interval_ns || *interval_ns < 100000000ULL || *interval_ns > 60000000000ULL) {
    return Error::usage("--interval must be a duration from 100ms to 60s (e.g. 1s), not '" +
                        flags.interval + "'");
  }
  if (flags.rows == 0) return Error::usage("-n must be at least 1");
  if (Status s = checkPrivileges(); !s) return s;
  auto limiter = XdpLimiter::open(flags.interface);
  if (!limiter) return limiter.error();
  auto hz = kernelHz();
  if (!hz) return hz.error();
  const bool live = !flags.json && isatty(STDOUT_FILENO);
  const double seconds = static_cast<double>(*interval_ns) / 1e9;
  interrupted = false;
  if (live) std::signal(SIGINT, [](int) { interrupted = true; });

  auto before = takeTopSample(*limiter);
  if (!before) return before.error();
  while (pause(*interval_ns)) {
    auto after = takeTopSample(*limiter);
    if (!after) return after.error();
    auto bans = limiter->bans();
    if (!bans) return bans.error();
    const double elapsed = static_cast<double>(after->jiffies - before->jiffies) / *hz;
    auto rows = rankTop(*before, *after, elapsed > 0 ? elapsed : seconds, *hz, *bans, flags.rows);
    if (flags.json) {
      std::cout << jsonText(topJson(flags.interface, rows, seconds)) << "\n";
      return okStatus();
    }
    if (!live) {
      std::cout << topText(flags.interface, rows, flags.interval);
      return okStatus();
    }
    // home the cursor and clear the screen, then draw the ranking again
    std::cout << "\033[H\033[2J" << topText(flags.interface, rows, flags.interval)
              << "\n(Ctrl-C to quit)" << std::flush;
    before = std::move(after);
  }
  std::cout << "\n";
  return okStatus();
}

}  // namespace

void addTopCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<TopFlags>();
  CLI::App* cmd = app.add_subcommand("top", "Show the sources with the most drops right now");
  addInterfaceArgument(cmd, flags->interface, "Interface")->required();
  cmd->add_option("-n", flags->rows, "How many sources to show")->capture_default_str();
  cmd->add_option("--interval", flags->interval,
                  "Measuring interval (refresh period on a terminal)")
      ->capture_default_str();
  cmd->add_flag("--json", flags->json, "One ranking as JSON");
  cmd->callback([flags, &selected] { selected = [flags] { return showTop(*flags); }; });
}

}  // namespace floodgate::cli
