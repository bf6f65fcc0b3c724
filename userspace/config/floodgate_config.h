// SPDX-License-Identifier: MIT
// FloodgateConfig: floodgate.yaml read and validated (interfaces, defaults, allow, deny,
// rules, http, fleet), and the AttachOptions it gives one interface. Reference: docs/config.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/adaptive_config.h"
#include "config/fleet_bans_config.h"
#include "controller/rule_spec.h"
#include "controller/xdp_limiter.h"
#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"
#include "floodgate/core/policy.h"
#include "floodgate/yaml/diagnostics.h"

namespace floodgate::config {

// One entry of `interfaces:`.
struct InterfaceConfig {
  std::string name;
  XdpMode mode = XdpMode::kAuto;
  // `next`: the XDP program behind floodgate (none: the slot emptied; unset: left as is).
  std::optional<NextProgramSpec> next;
  // `into_prog_array: {path, slot}`: run in an operator's prog array, not on the hook.
  std::string root_prog_array;
  uint32_t root_slot = 0;
  // `adaptive:`: floodgate run tightens the named rules under load (none: nothing moves).
  std::optional<AdaptiveConfig> adaptive;
};

// `defaults:`: settings of the program on every interface.
struct DefaultsConfig {
  uint32_t table_slots = FG_DEFAULT_TABLE_SLOTS;    // source table size, a power of two
  uint32_t list_max_entries = FG_LIST_MAX_ENTRIES;  // per list and family (allow v4, ...)
  FramePolicy malformed = FramePolicy::kDrop;
  FramePolicy fragments = FramePolicy::kPass;
  FramePolicy unknown_ext = FramePolicy::kDrop;
  // Neighbour Discovery and MLD from the link that pass by no rule
  LinkControlBudget link_control;
  bool monitor = false;  // every rule counts would-be drops and drops nothing
};

struct FloodgateConfig {
  std::vector<InterfaceConfig> interfaces;
  DefaultsConfig defaults;
  // Inline and `file:` entries in file order. Unset when the config has no such key: the
  // list is then left as it is (entries added with `floodgate allow add` survive a reload).
  std::optional<std::vector<Cidr>> allow;
  std::optional<std::vector<Cidr>> deny;
  std::vector<RuleSpec> rules;  // in file order; id and epoch 0 (the controller assigns them)
  std::optional<http::HttpConfig> http;  // the `http:` section, when there is one
  FleetBansConfig fleet_bans;            // `fleet.bans:`; disabled when absent
  // Keys of sections given with nothing under them (`rules:` with every rule commented out,
  // `fleet:`, `fleet.bans:`, `http:`), for the warnings.
  std::vector<std::string> empty_sections;
};

// Reads and validates the config at `path`. Every problem is added to `diagnostics` as
// `file:line:column: message` (an unreadable file or a YAML syntax error too); the result
// is meaningful only when none were added. `file:` list paths are relative to path's
// directory. Never throws. Thread-safe (no shared state). `text`, when given, gets the bytes
// read, so a caller can hand on exactly what was validated (the http: policies to publish).
FloodgateConfig loadConfig(const std::string& path, Diagnostics& diagnostics,
                           std::string* text = nullptr);

// What a valid config holds that is probably not what its author meant, one line each:
// a catch-all prefix in allow or deny (0.0.0.0/0 or ::/0 allows or drops every source of a
// family), and IPv4-mapped IPv6 prefixes (::ffff:a.b.c.d), which no packet carries as its
// source and so never match.
std::vector<std::string> configWarnings(const FloodgateConfig& config);

// Warnings for prefixes of a list named `name` that `verb` its sources: a /0 (every source of
// a family), an IPv4-mapped IPv6 prefix (no packet's source: it never matches), and unicast
// prefixes wider than kWidestIpv4 / kWidestIpv6 (one warning for all of them). For the config's
// allow and deny lists and for `floodgate allow|deny add` and `ban add`. Prefixes of unicast space
// (IPv4 below 224.0.0.0, IPv6 in 2000::/3) wider than these are wider than any one network's: a /4
// meant as a /24, say. Multicast, reserved and ULA blocks (bogon feeds, an allow of fc00::/7) are
// left out.
inline constexpr int kWidestIpv4 = 8;
inline constexpr int kWidestIpv6 = 12;
std::vector<std::string> cidrWarnings(const std::vector<Cidr>& list, const std::string& name,
                                      const std::string& verb);

// Same for YAML `text`; `file_name` names it in diagnostics and its directory anchors
// relative `file:` paths.
FloodgateConfig parseConfig(const std::string& text, const std::string& file_name,
                            Diagnostics& diagnostics);

// loadConfig for callers that want one value: the config, or an Error (kFailure) whose
// message is every diagnostic, one per line. `text`, when given, gets the bytes read.
Result<FloodgateConfig> loadValidConfig(const std::string& path, std::string* text = nullptr);

// The options to attach `interface` with: the config's rules, defaults and the interface's
// mode (auto when `interfaces:` is empty). An error when `interfaces:` lists others only.
// Rule ids are positional (0, 1, ...), right for a fresh attach; a reload must keep each
// rule's id by name instead (XdpLimiter::reload does). allow and deny are passed on as they
// are: set, they replace the interface's lists.
Result<AttachOptions> attachOptionsFor(const FloodgateConfig& config, const std::string& interface);

}  // namespace floodgate::config
