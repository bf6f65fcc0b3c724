// SPDX-License-Identifier: MIT
// FleetBansConfig: `fleet.bans:`, bans shared by every `floodgate run` of a fleet through a
// signed Redis stream: where the stream is, the secret that signs it, which bans this host
// shares, and what a host accepts from the others. Reference: docs/config.md.
#pragma once

#include <cstdint>
#include <string>

#include "floodgate/core/policy.h"

namespace floodgate::config {

struct FleetBansConfig {
  bool enabled = false;
  // The Redis servers holding the stream (type redis, address or cluster); the calls get
  // reportClientOptions' longer timeout.
  http::StoreConfig redis;
  std::string stream;
  std::string secret_file;
  std::string secret;  // read from secret_file when the config is parsed
  // Which bans of this host are published. Rule bans are off by default: a flood of spoofed
  // sources can trip a banning rule in the name of addresses that never sent it.
  bool share_manual = true;
  bool share_escalation = true;
  bool share_rule = false;
  // The longest ban a record may ask for: a record ending later is refused as absurd, and
  // this host publishes no longer ban. It is also how far back a starting host reads.
  uint64_t max_ban_ns = 86'400'000'000'000ULL;
  // Records a starting host reads back at most: the newest ones of the last max_ban.
  int64_t max_replay = 100'000;
  // The most fleet bans each family's ban table holds (of its 262144 entries): half, the
  // rest kept for this host's own bans (its rules', `ban add`'s, its escalations').
  int64_t max_entries = 131'072;
  // The widest prefixes a record may ban (a wider one is refused as too wide).
  int widest_ipv4 = 24;
  int widest_ipv6 = 48;

  bool operator==(const FleetBansConfig&) const = default;
};

}  // namespace floodgate::config
