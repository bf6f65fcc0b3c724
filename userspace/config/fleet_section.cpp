// SPDX-License-Identifier: MIT
// `fleet:`: bans shared by the fleet through a signed Redis stream (`fleet.bans`).
#include "config/sections.h"
#include "floodgate/common/units.h"
#include "floodgate/core/file_setting.h"
#include "floodgate/core/redis_address.h"
#include "floodgate/core/redis_login.h"
#include "floodgate/core/secret_file.h"
#include "floodgate_shared.h"

namespace floodgate::config {
namespace {

constexpr uint64_t kNsPerS = 1'000'000'000ULL;
// A ban lasts at most 30 days (the controller's limit), so a record may ask no more.
constexpr uint64_t kLongestBanNs = 30 * 86400 * kNsPerS;

bool redisAddress(YamlReader& reader, const YamlEntry& entry, const std::string& text,
                  const std::string& what) {
  if (auto parsed = http::redis::Address::parse(text); !parsed) {
    reader.error(entry, what + ": " + parsed.error().message);
    return false;
  }
  return true;
}

// address: HOST:PORT, or cluster: [HOST:PORT, ...]; false when neither is usable.
bool parseServers(YamlReader& reader, const YamlEntry& entry, const YamlFields& fields,
                  http::StoreConfig& redis) {
  const YamlEntry* address = fields.find("address");
  const YamlEntry* cluster = fields.find("cluster");
  if (address && cluster) {
    reader.error(*cluster,
                 "fleet.bans takes address (one Redis server) or cluster (its masters), not both");
    return false;
  }
  if (!address && !cluster) {
    reader.error(entry,
                 "fleet.bans needs address: HOST:PORT or cluster: [HOST:PORT, ...] (the "
                 "Redis servers holding the stream)");
    return false;
  }
  redis.type = "redis";
  if (address) {
    auto text = reader.text(*address, "fleet.bans.address");
    if (!text || !redisAddress(reader, *address, *text, "fleet.bans.address")) return false;
    redis.address = *text;
    return true;
  }
  for (const YamlString& node : reader.strings(*cluster, "fleet.bans.cluster",
                                               "HOST:PORT, any of the masters", "a cluster node")) {
    if (redisAddress(reader, node.entry, node.text, "a cluster node")) {
      redis.cluster.push_back(node.text);
    }
  }
  if (redis.cluster.empty()) {
    reader.error(*cluster, "fleet.bans.cluster must list at least one of the masters (HOST:PORT)");
    return false;
  }
  return true;
}

bool parseSecret(YamlReader& reader, const YamlEntry& entry, const YamlFields& fields,
                 FleetBansConfig& bans) {
  const YamlEntry* file = fields.find("secret_file");
  if (!file) {
    reader.error(entry,
                 "fleet.bans needs secret_file: PATH, a secret shared by the fleet that signs "
                 "every ban (anyone able to write to Redis could ban addresses otherwise)");
    return false;
  }
  auto secret =
      http::readFileSetting(reader, *file, "fleet.bans.secret_file", http::loadFleetSecret);
  if (!secret) return false;
  bans.secret_file = std::move(secret->path);
  bans.secret = std::move(secret->text);
  return true;
}

void parseShare(YamlReader& reader, const YamlEntry& entry, FleetBansConfig& bans) {
  bans.share_manual = bans.share_escalation = bans.share_rule = false;
  if (entry.value.IsSequence() && entry.value.size() == 0) return;  // share: [] receives only
  for (const YamlString& kind :
       reader.strings(entry, "fleet.bans.share", "a list of manual, escalation, rule", "a kind")) {
    if (kind.text == "manual") {
      bans.share_manual = true;
    } else if (kind.text == "escalation") {
      bans.share_escalation = true;
    } else if (kind.text == "rule") {
      bans.share_rule = true;
    } else {
      reader.error(kind.entry, "fleet.bans.share: '" + kind.text +
                                   "' is not a kind of ban; use manual, escalation or rule");
    }
  }
}

// bans: {address | cluster, stream, secret_file, share, max_ban, max_replay, max_entries,
//        widest_ipv4, widest_ipv6, username, password_file}
FleetBansConfig parseBans(YamlReader& reader, const YamlEntry& entry) {
  FleetBansConfig bans;
  std::optional<YamlFields> fields = reader.mapping(
      entry, "fleet.bans",
      {"address", "cluster", "stream", "secret_file", "share", "max_ban", "max_replay",
       "max_entries", "widest_ipv4", "widest_ipv6", "username", "password_file"});
  if (!fields) return bans;
  bool complete = parseServers(reader, entry, *fields, bans.redis);
  complete &= http::parseRedisLogin(reader, *fields, "fleet.bans", bans.redis);
  if (const YamlEntry* e = fields->find("stream")) {
    auto key = reader.text(*e, "fleet.bans.stream");
    complete &= key.has_value();
    if (key) bans.stream = *key;
  } else {
    reader.error(entry,
                 "fleet.bans needs stream: KEY, the Redis stream the fleet's bans go to "
                 "(not http.escalate's report stream)");
    complete = false;
  }
  complete &= parseSecret(reader, entry, *fields, bans);
  if (const YamlEntry* e = fields->find("share")) parseShare(reader, *e, bans);
  if (const YamlEntry* e = fields->find("max_ban")) {
    if (auto ns = reader.withUnit(*e, "fleet.bans.max_ban", parseDuration, "1d", kNsPerS,
                                  kLongestBanNs, formatDuration)) {
      bans.max_ban_ns = *ns;
    }
  }
  if (const YamlEntry* e = fields->find("max_replay")) {
    if (auto v = reader.integer(*e, "fleet.bans.max_replay", 1, 10'000'000)) bans.max_replay = *v;
  }
  if (const YamlEntry* e = fields->find("max_entries")) {
    // up to the table less the entries rule bans leave to manual bans and escalations
    if (auto v =
            reader.integer(*e, "fleet.bans.max_entries", 1, FG_BAN_MAX_ENTRIES - FG_BAN_RESERVE)) {
      bans.max_entries = *v;
    }
  }
  if (const YamlEntry* e = fields->find("widest_ipv4")) {
    if (auto v = reader.integer(*e, "fleet.bans.widest_ipv4", 8, 32)) {
      bans.widest_ipv4 = static_cast<int>(*v);
    }
  }
  if (const YamlEntry* e = fields->find("widest_ipv6")) {
    if (auto v = reader.integer(*e, "fleet.bans.widest_ipv6", 16, 128)) {
      bans.widest_ipv6 = static_cast<int>(*v);
    }
  }
  bans.enabled = complete;
  return bans;
}

}  // namespace

FleetBansConfig parseFleet(YamlReader& reader, const YamlEntry& entry) {
  if (entry.value.IsNull()) return {};
  std::optional<YamlFields> fields = reader.mapping(entry, "fleet", {"bans"});
  if (!fields) return {};
  const YamlEntry* bans = fields->find("bans");
  if (!bans || bans->value.IsNull()) return {};
  return parseBans(reader, *bans);
}

}  // namespace floodgate::config
