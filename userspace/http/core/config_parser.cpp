// SPDX-License-Identifier: MIT
// The `http:` section validator: checks every field and reports each problem where it is.
#include "floodgate/core/config_parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <tuple>

#include "floodgate/common/read_file.h"
#include "floodgate/common/units.h"
#include "floodgate/core/file_setting.h"
#include "floodgate/core/redis_address.h"
#include "floodgate/core/redis_login.h"
#include "floodgate/core/request_path.h"
#include "floodgate/core/secret_file.h"
#include "floodgate/yaml/yaml_mark.h"

namespace floodgate::http {

namespace {

using config::itemsOf;
using config::YamlEntry;
using config::YamlFields;
using config::YamlReader;
using config::YamlString;

// One validation pass over one section, through the reader every section of floodgate.yaml
// is read with: each check reports a positioned line and carries on.
class Parser {
 public:
  explicit Parser(YamlReader& reader) : reader_(reader) {}

  HttpConfig parse(const YamlEntry& http);

 private:
  std::optional<uint64_t> duration(const YamlEntry& entry, const std::string& what, uint64_t min_ns,
                                   uint64_t max_ns) {
    return reader_.withUnit(entry, what, parseDuration, "10s", min_ns, max_ns, formatDuration);
  }
  bool redisAddress(const YamlEntry& entry, const std::string& address, const std::string& what);

  void parseTrustedProxies(const YamlEntry& entry, HttpConfig& config);
  void parseStore(const YamlEntry& entry, StoreConfig& store);
  void parseClientAddress(const YamlFields& http, HttpConfig& config);
  void parseEscalate(const YamlEntry& entry, EscalateConfig& escalate);
  void parseReporters(const YamlFields& fields, EscalateConfig& escalate);
  bool parseReportStream(const YamlEntry& entry, const YamlFields& fields,
                         EscalateConfig& escalate);
  void parsePublish(const YamlEntry& entry, const EscalateConfig& escalate, PublishConfig& publish);
  void parsePublishSecret(const YamlFields& fields, const EscalateConfig& escalate,
                          PublishConfig& publish);
  void parseShedding(const YamlEntry& entry, HttpConfig& config);
  void parseAdaptive(const YamlEntry& entry, AdaptiveConcurrencyConfig& adaptive);
  std::optional<PriorityClass> parsePriorityClass(const YamlEntry& entry, size_t index,
                                                  bool& is_default);
  void parsePrefetch(const YamlEntry& entry, const std::string& what, const PolicyConfig& policy,
                     PrefetchConfig& prefetch);
  void parseSync(const YamlEntry& entry, const std::string& what, const PolicyConfig& policy,
                 SyncConfig& sync);
  RouteMatch parseMatch(const YamlEntry& entry, const std::string& what);
  void parseKeyPrefixes(const YamlFields& fields, const std::string& what, KeySpec& key);
  std::optional<PolicyConfig> parsePolicy(const YamlEntry& entry, size_t index);
  void parseRoutes(const YamlEntry& entry, const std::string& what, PolicyConfig& policy);
  void parseAlgorithm(const YamlEntry& entry, const YamlFields& fields, const std::string& what,
                      AlgorithmParams& params);

  YamlReader& reader_;
  std::string store_type_ = "memory";
  int ipv6_prefix_ = kDefaultIpv6Prefix;  // http.ipv6_prefix, read before the policies
};

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

// RFC 9110 token characters, as a header name must be.
bool isTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

HttpConfig Parser::parse(const YamlEntry& http) {
  HttpConfig config;
  if (http.value.IsNull()) return config;  // `http:` with nothing under it: no policies
  std::optional<YamlFields> fields = reader_.mapping(
      http, "http",
      {"trusted_proxies", "client_header", "ipv6_prefix", "store", "policies", "escalate",
       "publish", "shedding", "retry_after_jitter", "adaptive_concurrency"});
  if (!fields) return config;
  if (const YamlEntry* e = fields->find("trusted_proxies")) parseTrustedProxies(*e, config);
  parseClientAddress(*fields, config);
  ipv6_prefix_ = config.ipv6_prefix;
  if (const YamlEntry* e = fields->find("store")) parseStore(*e, config.store);
  store_type_ = config.store.type;
  if (const YamlEntry* e = fields->find("escalate")) parseEscalate(*e, config.escalate);
  if (const YamlEntry* e = fields->find("publish")) {
    parsePublish(*e, config.escalate, config.publish);
  }
  if (const YamlEntry* e = fields->find("shedding")) parseShedding(*e, config);
  if (const YamlEntry* e = fields->find("adaptive_concurrency")) {
    parseAdaptive(*e, config.adaptive_concurrency);
  }
  if (const YamlEntry* e = fields->find("retry_after_jitter")) {
    if (auto v = reader_.number(*e, "http.retry_after_jitter", 0, 1))
      config.retry_after_jitter = *v;
  }

  const YamlEntry* policies = fields->find("policies");
  if (!policies || !reader_.list(*policies, "http.policies", "policies")) return config;
  std::set<std::string> names;
  std::vector<YamlEntry> items = itemsOf(*policies);
  for (size_t i = 0; i < items.size(); ++i) {
    std::optional<PolicyConfig> policy = parsePolicy(items[i], i);
    if (!policy) continue;
    if (!names.insert(policy->name).second) {
      // A policy read without a problem is a mapping with one name.
      reader_.error(items[i].value["name"],
                    "policy name '" + policy->name +
                        "' is used twice; names must be unique (they appear in RateLimit "
                        "headers)");
      continue;
    }
    config.policies.push_back(std::move(*policy));
  }
  return config;
}

void Parser::parseTrustedProxies(const YamlEntry& entry, HttpConfig& config) {
  for (const YamlString& proxy : reader_.strings(entry, "http.trusted_proxies",
                                                 "addresses or CIDR prefixes", "a trusted proxy")) {
    std::optional<IpPrefix> prefix = IpPrefix::parse(proxy.text);
    if (!prefix) {
      reader_.error(proxy.entry,
                    "'" + proxy.text + "' is not an address or CIDR prefix (e.g. 10.0.0.0/8, ::1)");
      continue;
    }
    config.trusted_proxies.push_back(*prefix);
  }
}

// client_header: which header the trusted proxies name the client in; ipv6_prefix: the
// prefix an IPv6 client is keyed by. A header is never guessed, and one without trusted
// proxies (or proxies without one) is a mistake that would key every client wrongly.
void Parser::parseClientAddress(const YamlFields& http, HttpConfig& config) {
  if (const YamlEntry* e = http.find("client_header")) {
    if (auto text = reader_.text(*e, "http.client_header")) {
      if (auto header = parseClientHeader(*text)) {
        config.client_header = *header;
      } else {
        reader_.error(*e, "http.client_header '" + *text +
                              "' must be one of x-forwarded-for, forwarded, x-real-ip or none");
      }
    }
  }
  const bool proxies = !config.trusted_proxies.empty();
  const bool header = config.client_header != ClientHeader::kNone;
  if (proxies && !header) {
    reader_.error(*http.find("trusted_proxies"),
                  "http.trusted_proxies needs http.client_header: the header those proxies name "
                  "the client in (x-forwarded-for behind nginx or HAProxy, forwarded, or "
                  "x-real-ip)");
  } else if (header && !proxies) {
    reader_.error(*http.find("client_header"),
                  "http.client_header is read only from http.trusted_proxies: list the proxies "
                  "in front of the service, or set client_header: none");
  }
  if (const YamlEntry* e = http.find("ipv6_prefix")) {
    if (auto v = reader_.integer(*e, "http.ipv6_prefix", 32, 128)) {
      config.ipv6_prefix = static_cast<int>(*v);
    }
  }
}

bool Parser::redisAddress(const YamlEntry& entry, const std::string& address,
                          const std::string& what) {
  if (auto parsed = redis::Address::parse(address); !parsed) {
    reader_.error(entry, what + ": " + parsed.error().message);
    return false;
  }
  return true;
}

void Parser::parseStore(const YamlEntry& entry, StoreConfig& store) {
  std::optional<YamlFields> fields = reader_.mapping(
      entry, "http.store",
      {"type", "max_keys", "shards", "address", "cluster", "timeout_ms", "pool_size", "instances",
       "heartbeat", "breaker", "prefix", "username", "password_file"});
  if (!fields) return;
  if (const YamlEntry* e = fields->find("type")) {
    if (auto type = reader_.text(*e, "http.store.type")) {
      if (*type != "memory" && *type != "redis") {
        reader_.error(*e, "store type '" + *type + "' is not known; use 'memory' or 'redis'");
      } else {
        store.type = *type;
      }
    }
  }
  if (const YamlEntry* e = fields->find("max_keys")) {
    if (auto v = reader_.integer(*e, "http.store.max_keys", 1, 1'000'000'000)) store.max_keys = *v;
  }
  if (const YamlEntry* e = fields->find("shards")) {
    if (auto v = reader_.integer(*e, "http.store.shards", 1, 4096)) {
      store.shards = static_cast<int>(*v);
    }
  }
  const bool redis = store.type == "redis";
  for (const char* key : {"address", "cluster", "timeout_ms", "pool_size", "instances", "heartbeat",
                          "breaker", "prefix", "username", "password_file"}) {
    const YamlEntry* e = fields->find(key);
    if (e && !redis)
      reader_.error(*e, std::string("http.store.") + key + " applies only to type: redis");
  }
  if (!redis) return;
  const YamlEntry* address = fields->find("address");
  const YamlEntry* cluster = fields->find("cluster");
  if (address && cluster) {
    reader_.error(*cluster,
                  "http.store takes address (one Redis server) or cluster (its masters), not both");
  } else if (!address && !cluster) {
    reader_.error(entry,
                  "http.store of type redis needs address: HOST:PORT or cluster: [HOST:PORT, ...]");
  }
  if (address) {
    auto text = reader_.text(*address, "http.store.address");
    if (text && redisAddress(*address, *text, "http.store.address")) store.address = *text;
  }
  if (cluster) {
    if (cluster->value.IsSequence() && cluster->value.size() == 0) {
      reader_.error(*cluster,
                    "http.store.cluster must list at least one of the masters (HOST:PORT)");
    }
    for (const YamlString& node : reader_.strings(
             *cluster, "http.store.cluster", "HOST:PORT, any of the masters", "a cluster node")) {
      if (redisAddress(node.entry, node.text, "a cluster node")) store.cluster.push_back(node.text);
    }
  }
  parseRedisLogin(reader_, *fields, "http.store", store);
  if (const YamlEntry* e = fields->find("timeout_ms")) {
    if (auto v = reader_.integer(*e, "http.store.timeout_ms", 1, 60'000)) store.timeout_ms = *v;
  }
  if (const YamlEntry* e = fields->find("pool_size")) {
    if (auto v = reader_.integer(*e, "http.store.pool_size", 1, 1024)) store.pool_size = *v;
  }
  if (const YamlEntry* e = fields->find("instances")) {
    if (auto v = reader_.integer(*e, "http.store.instances", 1, 100'000)) store.instances = *v;
  }
  if (const YamlEntry* e = fields->find("prefix")) {
    if (auto v = reader_.text(*e, "http.store.prefix")) store.prefix = *v;
  }
  if (const YamlEntry* heartbeat = fields->find("heartbeat")) {
    if (auto beat =
            reader_.mapping(*heartbeat, "http.store.heartbeat", {"interval_ms", "expire_ms"})) {
      if (const YamlEntry* e = beat->find("interval_ms")) {
        if (auto v = reader_.integer(*e, "http.store.heartbeat.interval_ms", 10, 600'000)) {
          store.heartbeat_ms = *v;
        }
      }
      const YamlEntry* expire = beat->find("expire_ms");
      if (expire) {
        if (auto v = reader_.integer(*expire, "http.store.heartbeat.expire_ms", 20, 3'600'000)) {
          store.heartbeat_expire_ms = *v;
        }
      }
      if (store.heartbeat_expire_ms < 2 * store.heartbeat_ms) {
        reader_.error(expire ? *expire : *heartbeat,
                      "http.store.heartbeat.expire_ms must be at least twice interval_ms (" +
                          std::to_string(2 * store.heartbeat_ms) +
                          "), or one late beat drops a live instance");
      }
    }
  }
  if (const YamlEntry* breaker = fields->find("breaker")) {
    if (auto b = reader_.mapping(*breaker, "http.store.breaker", {"failures", "open_ms"})) {
      if (const YamlEntry* e = b->find("failures")) {
        if (auto v = reader_.integer(*e, "http.store.breaker.failures", 1, 1000)) {
          store.breaker_failures = *v;
        }
      }
      if (const YamlEntry* e = b->find("open_ms")) {
        if (auto v = reader_.integer(*e, "http.store.breaker.open_ms", 1, 3'600'000)) {
          store.breaker_open_ms = *v;
        }
      }
    }
  }
}

void Parser::parsePrefetch(const YamlEntry& entry, const std::string& what,
                           const PolicyConfig& policy, PrefetchConfig& prefetch) {
  std::optional<YamlFields> fields =
      reader_.mapping(entry, what, {"batch", "hot_keys", "detect_per_s", "lease_ms"});
  if (!fields) return;
  if (store_type_ != "redis") {
    reader_.error(entry,
                  what + " needs the redis store (a memory store has no round trips to save)");
    return;
  }
  if (!canLease(policy.algorithm.kind)) {
    reader_.error(entry, what + " works with fixed_window, token_bucket and gcra, not " +
                             std::string(algorithmName(policy.algorithm.kind)));
    return;
  }
  prefetch.enabled = true;
  if (const YamlEntry* e = fields->find("batch")) {
    if (auto v = reader_.integer(*e, what + ".batch", 1, kMaxLimit)) prefetch.batch = *v;
  }
  if (const YamlEntry* e = fields->find("hot_keys")) {
    for (const YamlString& key : reader_.strings(*e, what + ".hot_keys", "keys", "a hot key")) {
      if (key.text.size() > kMaxHotKeyBytes) {
        reader_.error(key.entry, what + ".hot_keys holds a key of " +
                                     std::to_string(key.text.size()) + " bytes, more than the " +
                                     std::to_string(kMaxHotKeyBytes) +
                                     " a hot key may have: leave it out (it is decided in Redis)");
        continue;
      }
      prefetch.hot_keys.push_back(key.text);
    }
  }
  if (const YamlEntry* e = fields->find("detect_per_s")) {
    if (auto v = reader_.integer(*e, what + ".detect_per_s", 0, 1'000'000'000)) {
      prefetch.detect_per_s = *v;
    }
  }
  if (const YamlEntry* e = fields->find("lease_ms")) {
    if (auto v = reader_.integer(*e, what + ".lease_ms", 1, 3'600'000)) prefetch.lease_ms = *v;
  }
  if (prefetch.hot_keys.empty() && prefetch.detect_per_s == 0) {
    reader_.error(entry, what + " needs hot_keys or detect_per_s (which keys to lease for)");
  }
}

void Parser::parseSync(const YamlEntry& entry, const std::string& what, const PolicyConfig& policy,
                       SyncConfig& sync) {
  std::optional<YamlFields> fields = reader_.mapping(entry, what, {"interval_ms"});
  if (!fields) return;
  if (store_type_ != "redis") {
    reader_.error(entry,
                  what + " needs the redis store (it reconciles local shares through Redis)");
    return;
  }
  if (!canLease(policy.algorithm.kind)) {
    reader_.error(entry, what + " works with fixed_window, token_bucket and gcra, not " +
                             std::string(algorithmName(policy.algorithm.kind)));
    return;
  }
  if (policy.prefetch.enabled) {
    reader_.error(entry,
                  what + " and prefetch do not go together (every decision is local already)");
    return;
  }
  sync.enabled = true;
  const YamlEntry* interval = fields->find("interval_ms");
  if (interval) {
    if (auto v = reader_.integer(*interval, what + ".interval_ms", 10, 60'000)) {
      sync.interval_ms = *v;
    }
  }
  if (isWindowAlgorithm(policy.algorithm.kind) && policy.algorithm.window_ms > 0 &&
      sync.interval_ms * 2 > policy.algorithm.window_ms) {
    reader_.error(interval ? *interval : entry,
                  what + ".interval_ms must be at most half the window (" +
                      std::to_string(policy.algorithm.window_ms / 2) +
                      " ms), or a share is stale before it is spent");
  }
}

// Who may report over the socket, and how many bans one reporter may cause. Names are
// resolved by the controller when it applies the config (a service never needs them).
void Parser::parseReporters(const YamlFields& fields, EscalateConfig& escalate) {
  auto isAccountName = [](const std::string& name) {
    return !name.empty() && name.size() <= 32 && name[0] != '-' &&
           std::all_of(name.begin(), name.end(), [](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                    c == '.' || c == '$';
           });
  };
  if (const YamlEntry* e = fields.find("socket_group")) {
    if (auto name = reader_.text(*e, "http.escalate.socket_group")) {
      if (isAccountName(*name)) {
        escalate.socket_group = *name;
      } else {
        reader_.error(
            *e, "http.escalate.socket_group '" + *name + "' is not a group name (e.g. floodgate)");
      }
    }
  }
  for (const char* key : {"reporter_users", "reporter_groups"}) {
    const YamlEntry* list = fields.find(key);
    if (!list) continue;
    const std::string what = std::string("http.escalate.") + key;
    auto& into = std::string_view(key) == "reporter_users" ? escalate.reporter_users
                                                           : escalate.reporter_groups;
    for (const YamlString& name :
         reader_.strings(*list, what, "names (e.g. [www-data])", what + " entry")) {
      if (!isAccountName(name.text)) {
        reader_.error(name.entry, what + " entry '" + name.text + "' is not a user or group name");
        continue;
      }
      into.push_back(name.text);
    }
  }
  if (const YamlEntry* e = fields.find("max_bans_per_minute")) {
    if (auto v = reader_.integer(*e, "http.escalate.max_bans_per_minute", 1, 1'000'000)) {
      escalate.max_bans_per_minute = *v;
    }
  }
  if (const YamlEntry* e = fields.find("max_stream_bans_per_minute")) {
    if (auto v = reader_.integer(*e, "http.escalate.max_stream_bans_per_minute", 1, 1'000'000)) {
      escalate.max_stream_bans_per_minute = *v;
    }
  }
  if (const YamlEntry* e = fields.find("max_bans_per_network_per_minute")) {
    if (auto v =
            reader_.integer(*e, "http.escalate.max_bans_per_network_per_minute", 1, 1'000'000)) {
      escalate.max_bans_per_network_per_minute = *v;
    }
  }
}

// escalate: {rejections: N, within: 10s, ban: 10m, socket: PATH, socket_group: NAME,
//            reporter_users: [NAME], reporter_groups: [NAME], max_bans_per_minute: N,
//            max_stream_bans_per_minute: N, max_bans_per_network_per_minute: N,
//            redis_stream: KEY, secret_file: PATH}
void Parser::parseEscalate(const YamlEntry& entry, EscalateConfig& escalate) {
  std::optional<YamlFields> fields =
      reader_.mapping(entry, "http.escalate",
                      {"rejections", "within", "ban", "socket", "socket_group", "reporter_users",
                       "reporter_groups", "max_bans_per_minute", "max_stream_bans_per_minute",
                       "max_bans_per_network_per_minute", "redis_stream", "secret_file"});
  if (!fields) return;
  parseReporters(*fields, escalate);
  bool complete = true;
  for (const char* key : {"rejections", "within", "ban"}) {
    if (!fields->has(key)) {
      reader_.error(entry, std::string("http.escalate needs ") + key +
                               " (e.g. {rejections: 50, within: 10s, ban: 10m})");
      complete = false;
    }
  }
  if (const YamlEntry* e = fields->find("rejections")) {
    if (auto v = reader_.integer(*e, "http.escalate.rejections", 1, 1'000'000)) {
      escalate.rejections = *v;
    } else {
      complete = false;
    }
  }
  if (const YamlEntry* e = fields->find("within")) {
    if (auto ns = duration(*e, "http.escalate.within", kNsPerS, 3600 * kNsPerS)) {
      escalate.within_ms = static_cast<int64_t>(*ns / kNsPerMs);
    } else {
      complete = false;
    }
  }
  if (const YamlEntry* e = fields->find("ban")) {
    if (auto ns = duration(*e, "http.escalate.ban", kNsPerS, 86400 * kNsPerS)) {
      escalate.ban_ns = *ns;
    } else {
      complete = false;
    }
  }
  if (const YamlEntry* e = fields->find("socket")) {
    auto path = reader_.text(*e, "http.escalate.socket");
    if (path && (path->front() != '/' || path->size() >= 108)) {
      reader_.error(*e,
                    "http.escalate.socket must be an absolute path shorter than 108 characters (a "
                    "Unix socket address)");
      complete = false;
    } else if (path) {
      escalate.socket = *path;
    }
  }
  if (fields->has("redis_stream")) complete &= parseReportStream(entry, *fields, escalate);
  if (const YamlEntry* e = fields->find("secret_file"); e && !fields->has("redis_stream")) {
    reader_.error(*e,
                  "http.escalate.secret_file signs reports to a Redis stream: add redis_stream: "
                  "KEY, or drop secret_file");
    complete = false;
  }
  escalate.enabled = complete;
}

// redis_stream: KEY with secret_file: PATH (the fleet's shared secret, read here so a
// config whose secret is missing is refused before anything changes).
bool Parser::parseReportStream(const YamlEntry& entry, const YamlFields& fields,
                               EscalateConfig& escalate) {
  const YamlEntry& stream = *fields.find("redis_stream");
  auto key = reader_.text(stream, "http.escalate.redis_stream");
  if (!key) return false;
  if (store_type_ != "redis") {
    reader_.error(stream,
                  "http.escalate.redis_stream needs http.store of type redis (its servers hold "
                  "the stream)");
    return false;
  }
  const YamlEntry* secret_file = fields.find("secret_file");
  if (!secret_file) {
    reader_.error(entry,
                  "http.escalate.redis_stream needs secret_file: PATH, a secret shared by the "
                  "fleet that signs every report (anyone able to write to Redis could ban "
                  "addresses otherwise)");
    return false;
  }
  auto secret = readFileSetting(
      reader_, *secret_file, "http.escalate.secret_file",
      [](const std::string& path, const std::string&) { return loadReportSecret(path); });
  if (!secret) return false;
  escalate.redis_stream = *key;
  escalate.secret_file = std::move(secret->path);
  escalate.secret = std::move(secret->text);
  return true;
}

// publish: {file: PATH, redis_key: KEY, redis_channel: CHANNEL, secret_file: PATH}
void Parser::parsePublish(const YamlEntry& entry, const EscalateConfig& escalate,
                          PublishConfig& publish) {
  std::optional<YamlFields> fields =
      reader_.mapping(entry, "http.publish", {"file", "redis_key", "redis_channel", "secret_file"});
  if (!fields) return;
  if (const YamlEntry* e = fields->find("file")) {
    if (auto path = reader_.text(*e, "http.publish.file")) {
      if (path->front() != '/' || path->back() == '/') {
        // services run elsewhere: a path relative to this config would mean nothing to them
        reader_.error(*e,
                      "http.publish.file must be an absolute file path, e.g. "
                      "/run/floodgate/http-policies.yaml, got '" +
                          *path + "'");
      } else {
        publish.file = *path;
      }
    }
  }
  if (const YamlEntry* e = fields->find("redis_key")) {
    if (auto key = reader_.text(*e, "http.publish.redis_key")) {
      if (store_type_ != "redis") {
        reader_.error(*e,
                      "http.publish.redis_key needs http.store of type redis (its address is "
                      "where the policies go)");
      } else {
        publish.redis_key = *key;
      }
    }
  }
  if (const YamlEntry* e = fields->find("redis_channel")) {
    if (!fields->has("redis_key")) {
      reader_.error(*e, "http.publish.redis_channel needs a redis_key to announce");
    } else if (auto channel = reader_.text(*e, "http.publish.redis_channel")) {
      publish.redis_channel = *channel;
    }
  }
  if (!publish.redis_key.empty() && publish.redis_channel.empty()) {
    publish.redis_channel = publish.redis_key;
  }
  parsePublishSecret(*fields, escalate, publish);
  if (!fields->has("file") && !fields->has("redis_key")) {
    reader_.error(entry,
                  "http.publish needs file: PATH or redis_key: KEY (where services read the "
                  "policies)");
  }
}

// Whoever can write the Redis key could hand the fleet any policies: what is published there
// is signed, and a config that cannot sign it is refused.
void Parser::parsePublishSecret(const YamlFields& fields, const EscalateConfig& escalate,
                                PublishConfig& publish) {
  if (const YamlEntry* e = fields.find("secret_file")) {
    if (!fields.has("redis_key")) {
      reader_.error(*e,
                    "http.publish.secret_file signs the policies published to Redis: add "
                    "redis_key: KEY, or drop secret_file");
    } else if (auto secret =
                   readFileSetting(reader_, *e, "http.publish.secret_file", loadFleetSecret)) {
      publish.secret_file = std::move(secret->path);
      publish.secret = std::move(secret->text);
    }
  } else if (!publish.redis_key.empty()) {
    if (escalate.secret.empty()) {
      reader_.error(*fields.find("redis_key"),
                    "http.publish.redis_key needs a secret to sign the policies with: set "
                    "http.publish.secret_file (or http.escalate.secret_file) to the fleet's "
                    "secret file");
    } else {
      publish.secret_file = escalate.secret_file;
      publish.secret = escalate.secret;
    }
  }
}

// http.shedding: priority classes, highest first, each with the requests in flight at
// which it is shed; the first keeps a share no other class can take.
void Parser::parseShedding(const YamlEntry& entry, HttpConfig& config) {
  SheddingConfig& shedding = config.shedding;
  std::optional<YamlFields> fields =
      reader_.mapping(entry, "http.shedding", {"classes", "priority_header", "retry_after"});
  if (!fields) return;
  if (const YamlEntry* e = fields->find("priority_header")) {
    if (auto name = reader_.text(*e, "http.shedding.priority_header")) {
      if (!std::all_of(name->begin(), name->end(), isTokenChar)) {
        reader_.error(*e, "http.shedding.priority_header '" + *name + "' is not a header name");
      } else if (config.trusted_proxies.empty()) {
        reader_.error(*e,
                      "http.shedding.priority_header is read only from http.trusted_proxies (a "
                      "client could name its own priority): list the proxies that set it, or "
                      "remove it");
      } else {
        shedding.priority_header = *name;
      }
    }
  }
  if (const YamlEntry* e = fields->find("retry_after")) {
    if (auto ns = duration(*e, "http.shedding.retry_after", kNsPerS, 3600 * kNsPerS)) {
      shedding.retry_after_ns = *ns;
    }
  }
  static constexpr const char* kClassesShape =
      "priority classes, highest first, each with a name and max_in_flight";
  const YamlEntry* classes = fields->find("classes");
  if (!classes) {
    reader_.error(entry, std::string("http.shedding needs classes: a list of ") + kClassesShape);
    return;
  }
  if (!reader_.list(*classes, "http.shedding.classes", kClassesShape)) return;
  if (classes->value.size() == 0) {
    reader_.error(*classes,
                  std::string("http.shedding.classes must be a list of ") + kClassesShape);
    return;
  }
  std::vector<YamlEntry> items = itemsOf(*classes);
  std::vector<size_t> read;  // the item of each class in shedding.classes
  std::optional<size_t> default_class;
  for (size_t i = 0; i < items.size(); ++i) {
    bool is_default = false;
    std::optional<PriorityClass> c = parsePriorityClass(items[i], i, is_default);
    if (!c) continue;
    // A class read without a problem is a mapping that holds each of its keys once.
    const YAML::Node& node = items[i].value;
    for (const PriorityClass& other : shedding.classes) {
      if (other.name == c->name) {
        reader_.error(node["name"], "priority class '" + c->name + "' is named twice");
      }
    }
    if (is_default) {
      if (default_class) {
        reader_.error(node["default"], "priority class '" + c->name +
                                           "' is a second default; only one class may be the "
                                           "default");
      }
      default_class = shedding.classes.size();
    }
    if (!shedding.classes.empty()) {
      const PriorityClass& above = shedding.classes.back();
      if (c->max_in_flight > above.max_in_flight) {
        reader_.error(node["max_in_flight"],
                      "priority class '" + c->name + "' (max_in_flight " +
                          std::to_string(c->max_in_flight) + ") is shed later than '" + above.name +
                          "' above it (" + std::to_string(above.max_in_flight) +
                          "): list classes from highest priority to lowest, each max_in_flight "
                          "at most the one above");
      } else if (shedding.classes.size() == 1 && c->max_in_flight == above.max_in_flight) {
        reader_.error(node["max_in_flight"],
                      "priority class '" + above.name +
                          "' keeps no share of its own: its max_in_flight must be above that of "
                          "'" +
                          c->name + "' (" + std::to_string(c->max_in_flight) + ")");
      }
    }
    shedding.classes.push_back(std::move(*c));
    read.push_back(i);
  }
  if (default_class == 0 && shedding.classes.size() > 1) {
    const YAML::Node& first = items[read[0]].value;
    reader_.error(first["default"],
                  "priority class '" + shedding.classes[0].name +
                      "' is the highest and may not be the default: a request nothing names or "
                      "matches would take the share kept for it; mark a lower class default: "
                      "true");
  }
  // Without a marked default, a request nothing names or matches is of the lowest class:
  // an unknown request never outranks a known one.
  shedding.default_class =
      default_class.value_or(shedding.classes.empty() ? 0 : shedding.classes.size() - 1);
}

// http.adaptive_concurrency: the bounds of a limit on requests in flight that follows the
// service's latency and errors (adaptive_limit.h).
void Parser::parseAdaptive(const YamlEntry& entry, AdaptiveConcurrencyConfig& adaptive) {
  const std::string what = "http.adaptive_concurrency";
  std::optional<YamlFields> fields =
      reader_.mapping(entry, what,
                      {"floor", "ceiling", "initial", "tolerance", "window", "window_ms",
                       "error_rate", "probe_every", "retry_after"});
  if (!fields) return;
  adaptive.enabled = true;
  auto readCount = [&](const char* key, int64_t& into, int64_t min, int64_t max) {
    if (const YamlEntry* e = fields->find(key)) {
      if (auto n = reader_.integer(*e, what + "." + key, min, max)) into = *n;
    }
  };
  readCount("floor", adaptive.floor, 1, 1'000'000);
  readCount("ceiling", adaptive.ceiling, 1, 1'000'000);
  readCount("initial", adaptive.initial, 1, 1'000'000);
  readCount("window", adaptive.window, 1, 1'000'000);
  readCount("window_ms", adaptive.window_ms, 1, 60'000);
  readCount("probe_every", adaptive.probe_every, 0, 1'000'000);
  if (const YamlEntry* e = fields->find("tolerance")) {
    if (auto t = reader_.number(*e, what + ".tolerance", 1, 10)) adaptive.tolerance = *t;
  }
  if (const YamlEntry* e = fields->find("error_rate")) {
    if (auto r = reader_.number(*e, what + ".error_rate", 0, 1)) adaptive.error_rate = *r;
  }
  if (const YamlEntry* e = fields->find("retry_after")) {
    if (auto ns = duration(*e, what + ".retry_after", kNsPerS, 3600 * kNsPerS)) {
      adaptive.retry_after_ns = *ns;
    }
  }
  if (adaptive.floor > adaptive.ceiling) {
    const YamlEntry* floor = fields->find("floor");
    reader_.error(floor ? *floor : entry, what + ".floor (" + std::to_string(adaptive.floor) +
                                              ") is above its ceiling (" +
                                              std::to_string(adaptive.ceiling) + ")");
  }
}

std::optional<PriorityClass> Parser::parsePriorityClass(const YamlEntry& entry, size_t index,
                                                        bool& is_default) {
  std::string what = "http.shedding.classes[" + std::to_string(index) + "]";
  std::optional<YamlFields> fields =
      reader_.mapping(entry, what, {"name", "max_in_flight", "match", "default"});
  if (!fields) return std::nullopt;
  const size_t errors_before = reader_.errorCount();
  PriorityClass c;
  if (const YamlEntry* e = fields->find("name"); !e) {
    reader_.error(entry, what + " needs a name");
  } else if (auto name = reader_.text(*e, what + ".name")) {
    if (!std::all_of(name->begin(), name->end(), isNameChar)) {
      reader_.error(*e, "priority class name '" + *name +
                            "' may only hold letters, digits, '_', '-' and '.'");
    }
    c.name = *name;
    what = "priority class '" + *name + "'";
  }
  if (const YamlEntry* e = fields->find("max_in_flight"); !e) {
    reader_.error(entry, what + " needs max_in_flight: the requests in flight at which it is shed");
  } else if (auto v = reader_.integer(*e, what + ".max_in_flight", 1, 1'000'000)) {
    c.max_in_flight = *v;
  }
  if (const YamlEntry* match = fields->find("match")) {
    if (reader_.list(*match, what + ".match", "{methods, path_prefix}")) {
      std::vector<YamlEntry> items = itemsOf(*match);
      for (size_t i = 0; i < items.size(); ++i) {
        c.match.push_back(parseMatch(items[i], what + ".match[" + std::to_string(i) + "]"));
      }
    }
  }
  if (const YamlEntry* e = fields->find("default")) {
    is_default = reader_.boolean(*e, what + ".default").value_or(false);
  }
  if (reader_.errorCount() != errors_before) return std::nullopt;
  return c;
}

RouteMatch Parser::parseMatch(const YamlEntry& entry, const std::string& what) {
  RouteMatch match;
  std::optional<YamlFields> fields = reader_.mapping(entry, what, {"methods", "path_prefix"});
  if (!fields) return match;
  if (const YamlEntry* methods = fields->find("methods")) {
    for (YamlString& method :
         reader_.strings(*methods, what + ".methods", "methods such as [GET, POST]", "a method")) {
      if (!std::all_of(method.text.begin(), method.text.end(),
                       [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })) {
        reader_.error(method.entry, "'" + method.text + "' is not an HTTP method");
        continue;
      }
      std::transform(method.text.begin(), method.text.end(), method.text.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      match.methods.push_back(std::move(method.text));
    }
  }
  if (const YamlEntry* e = fields->find("path_prefix")) {
    if (auto prefix = reader_.text(*e, what + ".path_prefix")) {
      if (prefix->front() != '/') {
        reader_.error(*e, what + ".path_prefix must start with '/', got '" + *prefix + "'");
      } else if (!isNormalPath(*prefix)) {
        // requests are matched by their normal path, which such a prefix never starts
        std::string normal;
        reader_.error(*e, what + ".path_prefix '" + *prefix +
                              "' has an empty, '.' or '..' segment: requests are matched by "
                              "their normal path; write '" +
                              std::string(normalPath(*prefix, normal)) + "'");
      } else {
        match.path_prefix = *prefix;
      }
    }
  }
  return match;
}

void Parser::parseAlgorithm(const YamlEntry& entry, const YamlFields& fields,
                            const std::string& what, AlgorithmParams& params) {
  const YamlEntry* algorithm = fields.find("algorithm");
  if (!algorithm) {
    reader_.error(entry, what +
                             " needs an algorithm (fixed_window, sliding_window_log, "
                             "sliding_window_counter, token_bucket, gcra, leaky_bucket)");
    return;
  }
  auto name = reader_.text(*algorithm, what + ".algorithm");
  if (!name) return;
  const YamlEntry* limit = fields.find("limit");
  const YamlEntry* window_ms = fields.find("window_ms");
  const YamlEntry* capacity = fields.find("capacity");
  const YamlEntry* rate_per_s = fields.find("rate_per_s");
  std::optional<AlgorithmKind> kind = algorithmFromName(*name);
  if (!kind) {
    reader_.error(*algorithm, "unknown algorithm '" + *name +
                                  "' (expected fixed_window, sliding_window_log, "
                                  "sliding_window_counter, token_bucket, gcra or leaky_bucket)");
    // Which keys belong depends on the algorithm, but each value given is still checked, so
    // that a bad name hides no other mistake.
    if (limit) reader_.integer(*limit, what + ".limit", 1, kMaxLimit);
    if (window_ms) reader_.integer(*window_ms, what + ".window_ms", 1, kMaxWindowMs);
    if (capacity) reader_.integer(*capacity, what + ".capacity", 1, kMaxLimit);
    if (rate_per_s) reader_.number(*rate_per_s, what + ".rate_per_s", kMinRatePerS, kMaxRatePerS);
    return;
  }
  params.kind = *kind;
  const bool window = isWindowAlgorithm(*kind);
  const char* wanted = window ? "limit and window_ms" : "capacity and rate_per_s";
  for (auto [key, value] : {std::pair{"limit", limit}, std::pair{"window_ms", window_ms},
                            std::pair{"capacity", capacity}, std::pair{"rate_per_s", rate_per_s}}) {
    const bool belongs =
        window == (std::string_view(key) == "limit" || std::string_view(key) == "window_ms");
    if (value && !belongs) {
      reader_.error(*value, *name + " takes " + wanted + ", not " + key);
    } else if (!value && belongs) {
      reader_.error(entry, what + " (" + *name + ") needs " + key);
    }
  }
  if (window) {
    if (limit) {
      if (auto v = reader_.integer(*limit, what + ".limit", 1, kMaxLimit)) params.limit = *v;
    }
    if (window_ms) {
      if (auto v = reader_.integer(*window_ms, what + ".window_ms", 1, kMaxWindowMs)) {
        params.window_ms = *v;
      }
    }
  } else {
    if (capacity) {
      if (auto v = reader_.integer(*capacity, what + ".capacity", 1, kMaxLimit)) {
        params.capacity = *v;
      }
    }
    if (rate_per_s) {
      if (auto v = reader_.number(*rate_per_s, what + ".rate_per_s", kMinRatePerS, kMaxRatePerS)) {
        // buckets run in thousandths of a unit a second: a finer rate would run rounded,
        // 0.0015 as 0.002, a third faster than written
        const double milli = *v * 1000.0;
        if (std::abs(milli - std::round(milli)) > 1e-6 * std::max(1.0, milli)) {
          reader_.error(*rate_per_s, what +
                                         ".rate_per_s is counted in thousandths of a unit a "
                                         "second: write at most three decimals (got " +
                                         rate_per_s->value.Scalar() + ")");
        } else {
          params.rate_per_s = *v;
        }
      }
    }
  }
}

// routes: [{match, cost}]: what one request costs on the routes that cost other than `cost`.
void Parser::parseRoutes(const YamlEntry& entry, const std::string& what, PolicyConfig& policy) {
  if (!reader_.list(entry, what + ".routes", "{match, cost}")) return;
  std::vector<YamlEntry> items = itemsOf(entry);
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string route_what = what + ".routes[" + std::to_string(i) + "]";
    std::optional<YamlFields> fields = reader_.mapping(items[i], route_what, {"match", "cost"});
    if (!fields) continue;
    RouteCost route;
    if (const YamlEntry* match = fields->find("match")) {
      route.match = parseMatch(*match, route_what + ".match");
    } else {
      reader_.error(items[i], route_what + " needs a match");
    }
    if (const YamlEntry* cost = fields->find("cost"); !cost) {
      reader_.error(items[i], route_what + " needs a cost");
    } else if (auto v = reader_.integer(*cost, route_what + ".cost", 1, kMaxLimit)) {
      route.cost = *v;
    }
    policy.routes.push_back(std::move(route));
  }
}

// ipv4_prefix: N, ipv6_prefix: N: a `key: ip` policy over whole prefixes of clients.
void Parser::parseKeyPrefixes(const YamlFields& fields, const std::string& what, KeySpec& key) {
  for (const auto& [field, least, most, out] :
       {std::tuple{"ipv4_prefix", 8, 32, &key.ipv4_prefix},
        std::tuple{"ipv6_prefix", 32, 128, &key.ipv6_prefix}}) {
    const YamlEntry* e = fields.find(field);
    if (e == nullptr) continue;
    if (key.kind != KeyKind::kIp) {
      reader_.error(*e, what + "." + field + " groups clients by address: it needs key: ip");
    } else if (auto v = reader_.integer(*e, what + "." + field, least, most)) {
      if (out == &key.ipv6_prefix && *v > ipv6_prefix_) {
        const std::string most_text = std::to_string(ipv6_prefix_);
        reader_.error(*e, what + ".ipv6_prefix " + std::to_string(*v) +
                              " is longer than http.ipv6_prefix (" + most_text +
                              "): a client rotating addresses inside its /" + most_text +
                              " would get a bucket per address; give at most " + most_text);
      }
      *out = static_cast<int>(*v);
    }
  }
}

std::optional<PolicyConfig> Parser::parsePolicy(const YamlEntry& entry, size_t index) {
  std::string what = "http.policies[" + std::to_string(index) + "]";
  std::optional<YamlFields> fields = reader_.mapping(
      entry, what,
      {"name", "match", "key", "ipv4_prefix", "ipv6_prefix", "algorithm", "limit", "window_ms",
       "capacity", "rate_per_s", "cost", "routes", "failure_mode", "prefetch", "sync"});
  if (!fields) return std::nullopt;
  const size_t errors_before = reader_.errorCount();
  PolicyConfig policy;

  if (const YamlEntry* e = fields->find("name"); !e) {
    reader_.error(entry, what + " needs a name");
  } else if (auto name = reader_.text(*e, what + ".name")) {
    if (!std::all_of(name->begin(), name->end(), isNameChar)) {
      reader_.error(*e,
                    "policy name '" + *name + "' may only hold letters, digits, '_', '-' and '.'");
    }
    policy.name = *name;
    what = "policy '" + *name + "'";
  }

  if (const YamlEntry* e = fields->find("match")) policy.match = parseMatch(*e, what + ".match");

  if (const YamlEntry* e = fields->find("key"); !e) {
    reader_.error(entry, what + " needs a key (ip, header:NAME or user)");
  } else if (auto key = reader_.text(*e, what + ".key")) {
    if (*key == "ip") {
      policy.key.kind = KeyKind::kIp;
    } else if (*key == "user") {
      policy.key.kind = KeyKind::kUser;
    } else if (key->starts_with("header:") && key->size() > 7 &&
               std::all_of(key->begin() + 7, key->end(), isTokenChar)) {
      policy.key.kind = KeyKind::kHeader;
      policy.key.header = key->substr(7);
    } else {
      reader_.error(*e,
                    "key '" + *key + "' must be ip, user or header:NAME (e.g. header:X-API-Key)");
    }
  }

  parseKeyPrefixes(*fields, what, policy.key);
  parseAlgorithm(entry, *fields, what, policy.algorithm);

  if (const YamlEntry* e = fields->find("cost")) {
    if (auto v = reader_.integer(*e, what + ".cost", 1, kMaxLimit)) policy.cost = *v;
  }
  if (const YamlEntry* e = fields->find("routes")) parseRoutes(*e, what, policy);
  if (const YamlEntry* e = fields->find("failure_mode")) {
    static constexpr FailureMode kModes[] = {FailureMode::kOpen, FailureMode::kClosed};
    if (auto index = reader_.choice(*e, what + ".failure_mode", {"open", "closed"})) {
      policy.failure_mode = kModes[*index];
    }
  }
  if (const YamlEntry* e = fields->find("prefetch")) {
    parsePrefetch(*e, what + ".prefetch", policy, policy.prefetch);
  }
  if (const YamlEntry* e = fields->find("sync")) parseSync(*e, what + ".sync", policy, policy.sync);
  if (reader_.errorCount() != errors_before) return std::nullopt;
  return policy;
}

Result<HttpConfig> finish(HttpConfig config, const config::Diagnostics& diagnostics) {
  if (!diagnostics.empty()) {
    std::string text = diagnostics.format();
    text.pop_back();  // the last newline
    return Error::failure(std::move(text));
  }
  return config;
}

}  // namespace

HttpConfig parseHttpSection(config::YamlReader& reader, const config::YamlEntry& http) {
  return Parser(reader).parse(http);
}

HttpConfig parseHttpSection(const YAML::Node& http, const std::string& file,
                            config::Diagnostics& diagnostics) {
  YamlReader reader(file, diagnostics);
  return parseHttpSection(reader, {http, http});
}

Result<HttpConfig> parseHttpConfigText(const std::string& text, const std::string& file) {
  config::Diagnostics diagnostics;
  YAML::Node root;
  try {
    root = config::loadOneDocument(text);
  } catch (const YAML::Exception& e) {
    config::addAt(diagnostics, file, e);
    return finish({}, diagnostics);
  }
  // The other top-level keys are floodgate.yaml's, read by its own parser.
  YamlReader reader(file, diagnostics);
  std::optional<YamlEntry> http = reader.field({root, root}, "", "http");
  if (!http) {
    diagnostics.add(file, 0, 0, "no top-level 'http:' section to read rate-limit policies from");
    return finish({}, diagnostics);
  }
  HttpConfig config;
  // The parser checks every node's type before reading it; this is the net under a yaml-cpp
  // throw it did not foresee, so that it still reaches the user as one positioned line.
  try {
    config = parseHttpSection(reader, *http);
  } catch (const YAML::Exception& e) {
    config::addAt(diagnostics, file, e);
  }
  return finish(std::move(config), diagnostics);
}

Result<HttpConfig> loadHttpConfig(const std::string& path) {
  Result<std::string> text = readConfigFile(path);
  if (!text) return text.error();
  return parseHttpConfigText(*text, path);
}

}  // namespace floodgate::http
