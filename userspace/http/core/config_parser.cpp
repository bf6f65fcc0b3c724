// SPDX-License-Identifier: MIT
// The `http:` section validator: checks every field and reports each problem where it is.
#include "floodgate/core/config_parser.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "floodgate/common/units.h"
#include "floodgate/core/redis_address.h"
#include "floodgate/core/secret_file.h"
#include "floodgate/yaml/yaml_mark.h"

namespace floodgate::http {

namespace {

// One validation pass over one file; every helper reports and carries on.
class Parser {
 public:
  Parser(const std::string& file, config::Diagnostics& diagnostics)
      : file_(file), diagnostics_(diagnostics) {}

  HttpConfig parse(const YAML::Node& http);

 private:
  void error(const YAML::Node& node, std::string message) {
    config::addAt(diagnostics_, file_, node, std::move(message));
  }

  bool requireMap(const YAML::Node& node, const std::string& what);
  void rejectUnknownKeys(const YAML::Node& map, const std::string& what,
                         std::initializer_list<std::string_view> known);
  std::optional<std::string> readString(const YAML::Node& node, const std::string& what);
  std::optional<int64_t> readInt(const YAML::Node& node, const std::string& what, int64_t min,
                                 int64_t max);
  std::optional<double> readDouble(const YAML::Node& node, const std::string& what, double min,
                                   double max);

  void parseTrustedProxies(const YAML::Node& node, HttpConfig& config);
  void parseStore(const YAML::Node& node, StoreConfig& store);
  void parseClientAddress(const YAML::Node& http, HttpConfig& config);
  void parseEscalate(const YAML::Node& node, EscalateConfig& escalate);
  void parseReporters(const YAML::Node& node, EscalateConfig& escalate);
  bool parseReportStream(const YAML::Node& node, EscalateConfig& escalate);
  void parsePublish(const YAML::Node& node, const EscalateConfig& escalate, PublishConfig& publish);
  void parsePublishSecret(const YAML::Node& node, const EscalateConfig& escalate,
                          PublishConfig& publish);
  std::optional<uint64_t> readDuration(const YAML::Node& node, const std::string& what,
                                       uint64_t min_ns, uint64_t max_ns);
  void parseShedding(const YAML::Node& node, HttpConfig& config);
  void parseAdaptive(const YAML::Node& node, AdaptiveConcurrencyConfig& adaptive);
  std::optional<PriorityClass> parsePriorityClass(const YAML::Node& node, size_t index,
                                                  bool& is_default);
  void parsePrefetch(const YAML::Node& node, const std::string& what, const PolicyConfig& policy,
                     PrefetchConfig& prefetch);
  void parseSync(const YAML::Node& node, const std::string& what, const PolicyConfig& policy,
                 SyncConfig& sync);
  RouteMatch parseMatch(const YAML::Node& node, const std::string& what);
  std::optional<PolicyConfig> parsePolicy(const YAML::Node& node, size_t index);
  void parseAlgorithm(const YAML::Node& policy, const std::string& what, AlgorithmParams& params);

  const std::string& file_;
  config::Diagnostics& diagnostics_;
  std::string store_type_ = "memory";
};

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

// RFC 9110 token characters, as a header name must be.
bool isTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool Parser::requireMap(const YAML::Node& node, const std::string& what) {
  if (node.IsMap()) return true;
  error(node, what + " must be a mapping");
  return false;
}

void Parser::rejectUnknownKeys(const YAML::Node& map, const std::string& what,
                               std::initializer_list<std::string_view> known) {
  for (const auto& item : map) {
    std::string key = item.first.IsScalar() ? item.first.Scalar() : std::string();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    error(item.first, "unknown key '" + key + "' in " + what + " (expected one of: " + list + ")");
  }
}

std::optional<std::string> Parser::readString(const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar() || node.Scalar().empty()) {
    error(node, what + " must be a non-empty string");
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<int64_t> Parser::readInt(const YAML::Node& node, const std::string& what, int64_t min,
                                       int64_t max) {
  int64_t value = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value)) {
    error(node, what + " must be a whole number");
    return std::nullopt;
  }
  if (value < min || value > max) {
    error(node, what + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
                    ", got " + std::to_string(value));
    return std::nullopt;
  }
  return value;
}

std::optional<double> Parser::readDouble(const YAML::Node& node, const std::string& what,
                                         double min, double max) {
  double value = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value)) {
    error(node, what + " must be a number");
    return std::nullopt;
  }
  if (!(value >= min && value <= max)) {
    std::ostringstream range;
    range.precision(12);
    range << what << " must be between " << min << " and " << max << ", got " << node.Scalar();
    error(node, range.str());
    return std::nullopt;
  }
  return value;
}

HttpConfig Parser::parse(const YAML::Node& http) {
  HttpConfig config;
  if (http.IsNull()) return config;  // `http:` with nothing under it: no policies
  if (!requireMap(http, "http")) return config;
  rejectUnknownKeys(
      http, "http",
      {"trusted_proxies", "client_header", "ipv6_prefix", "store", "policies", "escalate",
       "publish", "shedding", "retry_after_jitter", "adaptive_concurrency"});
  if (http["trusted_proxies"]) parseTrustedProxies(http["trusted_proxies"], config);
  parseClientAddress(http, config);
  if (http["store"]) parseStore(http["store"], config.store);
  store_type_ = config.store.type;
  if (http["escalate"]) parseEscalate(http["escalate"], config.escalate);
  if (http["publish"]) parsePublish(http["publish"], config.escalate, config.publish);
  if (http["shedding"]) parseShedding(http["shedding"], config);
  if (http["adaptive_concurrency"]) {
    parseAdaptive(http["adaptive_concurrency"], config.adaptive_concurrency);
  }
  if (const YAML::Node jitter = http["retry_after_jitter"]) {
    if (auto v = readDouble(jitter, "http.retry_after_jitter", 0, 1)) {
      config.retry_after_jitter = *v;
    }
  }

  const YAML::Node policies = http["policies"];
  if (!policies) return config;
  if (!policies.IsSequence()) {
    error(policies, "http.policies must be a list of policies");
    return config;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < policies.size(); ++i) {
    std::optional<PolicyConfig> policy = parsePolicy(policies[i], i);
    if (!policy) continue;
    if (!names.insert(policy->name).second) {
      error(policies[i]["name"], "policy name '" + policy->name +
                                     "' is used twice; names must be unique (they appear in "
                                     "RateLimit headers)");
      continue;
    }
    config.policies.push_back(std::move(*policy));
  }
  return config;
}

void Parser::parseTrustedProxies(const YAML::Node& node, HttpConfig& config) {
  if (!node.IsSequence()) {
    error(node, "http.trusted_proxies must be a list of addresses or CIDR prefixes");
    return;
  }
  for (const YAML::Node& item : node) {
    auto text = readString(item, "a trusted proxy");
    if (!text) continue;
    std::optional<Cidr> cidr = Cidr::parse(*text);
    if (!cidr) {
      error(item, "'" + *text + "' is not an address or CIDR prefix (e.g. 10.0.0.0/8, ::1)");
      continue;
    }
    config.trusted_proxies.push_back(*cidr);
  }
}

// client_header: which header the trusted proxies name the client in; ipv6_prefix: the
// prefix an IPv6 client is keyed by. A header is never guessed, and one without trusted
// proxies (or proxies without one) is a mistake that would key every client wrongly.
void Parser::parseClientAddress(const YAML::Node& http, HttpConfig& config) {
  if (const YAML::Node node = http["client_header"]) {
    if (auto text = readString(node, "http.client_header")) {
      if (auto header = parseClientHeader(*text)) {
        config.client_header = *header;
      } else {
        error(node, "http.client_header '" + *text +
                        "' must be one of x-forwarded-for, forwarded, x-real-ip or none");
      }
    }
  }
  const bool proxies = !config.trusted_proxies.empty();
  const bool header = config.client_header != ClientHeader::kNone;
  if (proxies && !header) {
    error(http["trusted_proxies"],
          "http.trusted_proxies needs http.client_header: the header those proxies name the "
          "client in (x-forwarded-for behind nginx or HAProxy, forwarded, or x-real-ip)");
  } else if (header && !proxies) {
    error(http["client_header"],
          "http.client_header is read only from http.trusted_proxies: list the proxies in "
          "front of the service, or set client_header: none");
  }
  if (const YAML::Node node = http["ipv6_prefix"]) {
    if (auto v = readInt(node, "http.ipv6_prefix", 32, 128)) {
      config.ipv6_prefix = static_cast<int>(*v);
    }
  }
}

void Parser::parseStore(const YAML::Node& node, StoreConfig& store) {
  if (!requireMap(node, "http.store")) return;
  rejectUnknownKeys(node, "http.store",
                    {"type", "max_keys", "shards", "address", "cluster", "timeout_ms", "pool_size",
                     "instances", "heartbeat", "breaker", "prefix"});
  if (node["type"]) {
    if (auto type = readString(node["type"], "http.store.type")) {
      if (*type != "memory" && *type != "redis") {
        error(node["type"], "store type '" + *type + "' is not known; use 'memory' or 'redis'");
      } else {
        store.type = *type;
      }
    }
  }
  if (node["max_keys"]) {
    if (auto v = readInt(node["max_keys"], "http.store.max_keys", 1, 1'000'000'000)) {
      store.max_keys = *v;
    }
  }
  if (node["shards"]) {
    if (auto v = readInt(node["shards"], "http.store.shards", 1, 4096)) {
      store.shards = static_cast<int>(*v);
    }
  }
  const bool redis = store.type == "redis";
  for (const char* key : {"address", "cluster", "timeout_ms", "pool_size", "instances", "heartbeat",
                          "breaker", "prefix"}) {
    if (node[key] && !redis)
      error(node[key], std::string("http.store.") + key + " applies only to type: redis");
  }
  if (!redis) return;
  auto readAddress = [&](const YAML::Node& n,
                         const std::string& what) -> std::optional<std::string> {
    auto text = readString(n, what);
    if (!text) return std::nullopt;
    if (auto parsed = redis::Address::parse(*text); !parsed) {
      error(n, what + ": " + parsed.error().message);
      return std::nullopt;
    }
    return text;
  };
  if (node["address"] && node["cluster"]) {
    error(node["cluster"],
          "http.store takes address (one Redis server) or cluster (its "
          "masters), not both");
  } else if (!node["address"] && !node["cluster"]) {
    error(node, "http.store of type redis needs address: HOST:PORT or cluster: [HOST:PORT, ...]");
  }
  if (node["address"]) {
    if (auto a = readAddress(node["address"], "http.store.address")) store.address = *a;
  }
  if (const YAML::Node cluster = node["cluster"]) {
    if (!cluster.IsSequence() || cluster.size() == 0) {
      error(cluster, "http.store.cluster must be a list of HOST:PORT (any of the masters)");
    } else {
      for (const YAML::Node& item : cluster) {
        if (auto a = readAddress(item, "a cluster node")) store.cluster.push_back(*a);
      }
    }
  }
  if (node["timeout_ms"]) {
    if (auto v = readInt(node["timeout_ms"], "http.store.timeout_ms", 1, 60'000)) {
      store.timeout_ms = *v;
    }
  }
  if (node["pool_size"]) {
    if (auto v = readInt(node["pool_size"], "http.store.pool_size", 1, 1024)) store.pool_size = *v;
  }
  if (node["instances"]) {
    if (auto v = readInt(node["instances"], "http.store.instances", 1, 100'000)) {
      store.instances = *v;
    }
  }
  if (node["prefix"]) {
    if (auto v = readString(node["prefix"], "http.store.prefix")) store.prefix = *v;
  }
  if (const YAML::Node heartbeat = node["heartbeat"]) {
    if (requireMap(heartbeat, "http.store.heartbeat")) {
      rejectUnknownKeys(heartbeat, "http.store.heartbeat", {"interval_ms", "expire_ms"});
      if (heartbeat["interval_ms"]) {
        if (auto v = readInt(heartbeat["interval_ms"], "http.store.heartbeat.interval_ms", 10,
                             600'000)) {
          store.heartbeat_ms = *v;
        }
      }
      if (heartbeat["expire_ms"]) {
        if (auto v =
                readInt(heartbeat["expire_ms"], "http.store.heartbeat.expire_ms", 20, 3'600'000)) {
          store.heartbeat_expire_ms = *v;
        }
      }
      if (store.heartbeat_expire_ms < 2 * store.heartbeat_ms) {
        error(heartbeat["expire_ms"] ? heartbeat["expire_ms"] : heartbeat,
              "http.store.heartbeat.expire_ms must be at least twice interval_ms (" +
                  std::to_string(2 * store.heartbeat_ms) +
                  "), or one late beat drops a live instance");
      }
    }
  }
  if (const YAML::Node breaker = node["breaker"]) {
    if (requireMap(breaker, "http.store.breaker")) {
      rejectUnknownKeys(breaker, "http.store.breaker", {"failures", "open_ms"});
      if (breaker["failures"]) {
        if (auto v = readInt(breaker["failures"], "http.store.breaker.failures", 1, 1000)) {
          store.breaker_failures = *v;
        }
      }
      if (breaker["open_ms"]) {
        if (auto v = readInt(breaker["open_ms"], "http.store.breaker.open_ms", 1, 3'600'000)) {
          store.breaker_open_ms = *v;
        }
      }
    }
  }
}

void Parser::parsePrefetch(const YAML::Node& node, const std::string& what,
                           const PolicyConfig& policy, PrefetchConfig& prefetch) {
  if (!requireMap(node, what)) return;
  rejectUnknownKeys(node, what, {"batch", "hot_keys", "detect_per_s", "lease_ms"});
  if (store_type_ != "redis") {
    error(node, what + " needs the redis store (a memory store has no round trips to save)");
    return;
  }
  if (!canLease(policy.algorithm.kind)) {
    error(node, what + " works with fixed_window, token_bucket and gcra, not " +
                    std::string(algorithmName(policy.algorithm.kind)));
    return;
  }
  prefetch.enabled = true;
  if (node["batch"]) {
    if (auto v = readInt(node["batch"], what + ".batch", 1, kMaxLimit)) prefetch.batch = *v;
  }
  if (const YAML::Node keys = node["hot_keys"]) {
    if (!keys.IsSequence()) {
      error(keys, what + ".hot_keys must be a list of keys");
    } else {
      for (const YAML::Node& k : keys) {
        if (auto key = readString(k, "a hot key")) prefetch.hot_keys.push_back(*key);
      }
    }
  }
  if (node["detect_per_s"]) {
    if (auto v = readInt(node["detect_per_s"], what + ".detect_per_s", 0, 1'000'000'000)) {
      prefetch.detect_per_s = *v;
    }
  }
  if (node["lease_ms"]) {
    if (auto v = readInt(node["lease_ms"], what + ".lease_ms", 1, 3'600'000)) {
      prefetch.lease_ms = *v;
    }
  }
  if (prefetch.hot_keys.empty() && prefetch.detect_per_s == 0) {
    error(node, what + " needs hot_keys or detect_per_s (which keys to lease for)");
  }
}

void Parser::parseSync(const YAML::Node& node, const std::string& what, const PolicyConfig& policy,
                       SyncConfig& sync) {
  if (!requireMap(node, what)) return;
  rejectUnknownKeys(node, what, {"interval_ms"});
  if (store_type_ != "redis") {
    error(node, what + " needs the redis store (it reconciles local shares through Redis)");
    return;
  }
  if (!canLease(policy.algorithm.kind)) {
    error(node, what + " works with fixed_window, token_bucket and gcra, not " +
                    std::string(algorithmName(policy.algorithm.kind)));
    return;
  }
  if (policy.prefetch.enabled) {
    error(node, what + " and prefetch do not go together (every decision is local already)");
    return;
  }
  sync.enabled = true;
  if (node["interval_ms"]) {
    if (auto v = readInt(node["interval_ms"], what + ".interval_ms", 10, 60'000)) {
      sync.interval_ms = *v;
    }
  }
  if (isWindowAlgorithm(policy.algorithm.kind) && policy.algorithm.window_ms > 0 &&
      sync.interval_ms * 2 > policy.algorithm.window_ms) {
    error(node["interval_ms"] ? node["interval_ms"] : node,
          what + ".interval_ms must be at most half the window (" +
              std::to_string(policy.algorithm.window_ms / 2) +
              " ms), or a share is stale before it is spent");
  }
}

std::optional<uint64_t> Parser::readDuration(const YAML::Node& node, const std::string& what,
                                             uint64_t min_ns, uint64_t max_ns) {
  auto ns = node.IsScalar() ? parseDuration(node.Scalar()) : Result<uint64_t>(Error::usage(""));
  if (!ns) {
    error(node, what + " must be a duration such as 10s or 10m");
    return std::nullopt;
  }
  if (*ns < min_ns || *ns > max_ns) {
    error(node, what + " must be from " + formatDuration(min_ns) + " to " + formatDuration(max_ns) +
                    ", got " + node.Scalar());
    return std::nullopt;
  }
  return *ns;
}

// Who may report over the socket, and how many bans one reporter may cause. Names are
// resolved by the controller when it applies the config (a service never needs them).
void Parser::parseReporters(const YAML::Node& node, EscalateConfig& escalate) {
  auto isAccountName = [](const std::string& name) {
    return !name.empty() && name.size() <= 32 && name[0] != '-' &&
           std::all_of(name.begin(), name.end(), [](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                    c == '.' || c == '$';
           });
  };
  if (node["socket_group"]) {
    if (auto name = readString(node["socket_group"], "http.escalate.socket_group")) {
      if (isAccountName(*name)) {
        escalate.socket_group = *name;
      } else {
        error(node["socket_group"],
              "http.escalate.socket_group '" + *name + "' is not a group name (e.g. floodgate)");
      }
    }
  }
  for (const char* key : {"reporter_users", "reporter_groups"}) {
    const YAML::Node list = node[key];
    if (!list) continue;
    const std::string what = std::string("http.escalate.") + key;
    if (!list.IsSequence()) {
      error(list, what + " must be a list of names (e.g. [www-data])");
      continue;
    }
    auto& into = std::string_view(key) == "reporter_users" ? escalate.reporter_users
                                                           : escalate.reporter_groups;
    for (const YAML::Node& item : list) {
      auto name = readString(item, what + " entry");
      if (!name) continue;
      if (!isAccountName(*name)) {
        error(item, what + " entry '" + *name + "' is not a user or group name");
        continue;
      }
      into.push_back(*name);
    }
  }
  if (node["max_bans_per_minute"]) {
    if (auto v = readInt(node["max_bans_per_minute"], "http.escalate.max_bans_per_minute", 1,
                         1'000'000)) {
      escalate.max_bans_per_minute = *v;
    }
  }
}

// escalate: {rejections: N, within: 10s, ban: 10m, socket: PATH, socket_group: NAME,
//            reporter_users: [NAME], reporter_groups: [NAME], max_bans_per_minute: N,
//            redis_stream: KEY, secret_file: PATH}
void Parser::parseEscalate(const YAML::Node& node, EscalateConfig& escalate) {
  if (!requireMap(node, "http.escalate")) return;
  rejectUnknownKeys(node, "http.escalate",
                    {"rejections", "within", "ban", "socket", "socket_group", "reporter_users",
                     "reporter_groups", "max_bans_per_minute", "redis_stream", "secret_file"});
  parseReporters(node, escalate);
  bool complete = true;
  for (const char* key : {"rejections", "within", "ban"}) {
    if (!node[key]) {
      error(node, std::string("http.escalate needs ") + key +
                      " (e.g. {rejections: 50, within: 10s, ban: 10m})");
      complete = false;
    }
  }
  if (node["rejections"]) {
    if (auto v = readInt(node["rejections"], "http.escalate.rejections", 1, 1'000'000)) {
      escalate.rejections = *v;
    } else {
      complete = false;
    }
  }
  if (node["within"]) {
    if (auto ns =
            readDuration(node["within"], "http.escalate.within", 1000000000ULL, 3600000000000ULL)) {
      escalate.within_ms = static_cast<int64_t>(*ns / 1000000);
    } else {
      complete = false;
    }
  }
  if (node["ban"]) {
    if (auto ns =
            readDuration(node["ban"], "http.escalate.ban", 1000000000ULL, 86400000000000ULL)) {
      escalate.ban_ns = *ns;
    } else {
      complete = false;
    }
  }
  if (node["socket"]) {
    auto path = readString(node["socket"], "http.escalate.socket");
    if (path && (path->front() != '/' || path->size() >= 108)) {
      error(node["socket"],
            "http.escalate.socket must be an absolute path shorter than 108 "
            "characters (a Unix socket address)");
      complete = false;
    } else if (path) {
      escalate.socket = *path;
    }
  }
  if (node["redis_stream"]) complete &= parseReportStream(node, escalate);
  if (node["secret_file"] && !node["redis_stream"]) {
    error(node["secret_file"],
          "http.escalate.secret_file signs reports to a Redis stream: add redis_stream: KEY, or "
          "drop secret_file");
    complete = false;
  }
  escalate.enabled = complete;
}

// redis_stream: KEY with secret_file: PATH (the fleet's shared secret, read here so a
// config whose secret is missing is refused before anything changes).
bool Parser::parseReportStream(const YAML::Node& node, EscalateConfig& escalate) {
  auto key = readString(node["redis_stream"], "http.escalate.redis_stream");
  if (!key) return false;
  if (store_type_ != "redis") {
    error(node["redis_stream"],
          "http.escalate.redis_stream needs http.store of type redis (its servers hold the "
          "stream)");
    return false;
  }
  if (!node["secret_file"]) {
    error(node,
          "http.escalate.redis_stream needs secret_file: PATH, a secret shared by the fleet that "
          "signs every report (anyone able to write to Redis could ban addresses otherwise)");
    return false;
  }
  auto path = readString(node["secret_file"], "http.escalate.secret_file");
  if (!path) return false;
  if (path->front() != '/') {
    // the policies are published to services on other hosts: only an absolute path means
    // the same file everywhere
    error(node["secret_file"],
          "http.escalate.secret_file must be an absolute path, got '" + *path + "'");
    return false;
  }
  auto secret = loadReportSecret(*path);
  if (!secret) {
    error(node["secret_file"], secret.error().message);
    return false;
  }
  escalate.redis_stream = *key;
  escalate.secret_file = *path;
  escalate.secret = std::move(*secret);
  return true;
}

// publish: {file: PATH, redis_key: KEY, redis_channel: CHANNEL, secret_file: PATH}
void Parser::parsePublish(const YAML::Node& node, const EscalateConfig& escalate,
                          PublishConfig& publish) {
  if (!requireMap(node, "http.publish")) return;
  rejectUnknownKeys(node, "http.publish", {"file", "redis_key", "redis_channel", "secret_file"});
  if (node["file"]) {
    if (auto path = readString(node["file"], "http.publish.file")) {
      if (path->front() != '/' || path->back() == '/') {
        // services run elsewhere: a path relative to this config would mean nothing to them
        error(node["file"],
              "http.publish.file must be an absolute file path, e.g. "
              "/run/floodgate/http-policies.yaml, got '" +
                  *path + "'");
      } else {
        publish.file = *path;
      }
    }
  }
  if (node["redis_key"]) {
    if (auto key = readString(node["redis_key"], "http.publish.redis_key")) {
      if (store_type_ != "redis") {
        error(node["redis_key"],
              "http.publish.redis_key needs http.store of type redis (its address is where "
              "the policies go)");
      } else {
        publish.redis_key = *key;
      }
    }
  }
  if (node["redis_channel"]) {
    if (!node["redis_key"]) {
      error(node["redis_channel"], "http.publish.redis_channel needs a redis_key to announce");
    } else if (auto channel = readString(node["redis_channel"], "http.publish.redis_channel")) {
      publish.redis_channel = *channel;
    }
  }
  if (!publish.redis_key.empty() && publish.redis_channel.empty()) {
    publish.redis_channel = publish.redis_key;
  }
  parsePublishSecret(node, escalate, publish);
  if (!node["file"] && !node["redis_key"]) {
    error(node,
          "http.publish needs file: PATH or redis_key: KEY (where services read the policies)");
  }
}

// Whoever can write the Redis key could hand the fleet any policies: what is published there
// is signed, and a config that cannot sign it is refused.
void Parser::parsePublishSecret(const YAML::Node& node, const EscalateConfig& escalate,
                                PublishConfig& publish) {
  if (node["secret_file"]) {
    if (!node["redis_key"]) {
      error(node["secret_file"],
            "http.publish.secret_file signs the policies published to Redis: add redis_key: "
            "KEY, or drop secret_file");
    } else if (auto path = readString(node["secret_file"], "http.publish.secret_file")) {
      auto secret = loadFleetSecret(*path, "http.publish.secret_file");
      if (!secret) {
        error(node["secret_file"], secret.error().message);
      } else {
        publish.secret_file = *path;
        publish.secret = std::move(*secret);
      }
    }
  } else if (!publish.redis_key.empty()) {
    if (escalate.secret.empty()) {
      error(node["redis_key"],
            "http.publish.redis_key needs a secret to sign the policies with: set "
            "http.publish.secret_file (or http.escalate.secret_file) to the fleet's secret file");
    } else {
      publish.secret_file = escalate.secret_file;
      publish.secret = escalate.secret;
    }
  }
}

// http.shedding: priority classes, highest first, each with the requests in flight at
// which it is shed; the first keeps a share no other class can take.
void Parser::parseShedding(const YAML::Node& node, HttpConfig& config) {
  SheddingConfig& shedding = config.shedding;
  if (!requireMap(node, "http.shedding")) return;
  rejectUnknownKeys(node, "http.shedding", {"classes", "priority_header", "retry_after"});
  if (const YAML::Node header = node["priority_header"]) {
    if (auto name = readString(header, "http.shedding.priority_header")) {
      if (!std::all_of(name->begin(), name->end(), isTokenChar)) {
        error(header, "http.shedding.priority_header '" + *name + "' is not a header name");
      } else if (config.trusted_proxies.empty()) {
        error(header,
              "http.shedding.priority_header is read only from http.trusted_proxies (a client "
              "could name its own priority): list the proxies that set it, or remove it");
      } else {
        shedding.priority_header = *name;
      }
    }
  }
  if (const YAML::Node retry = node["retry_after"]) {
    if (auto ns = readDuration(retry, "http.shedding.retry_after", kNsPerS, 3600 * kNsPerS)) {
      shedding.retry_after_ns = *ns;
    }
  }
  const YAML::Node classes = node["classes"];
  if (!classes || !classes.IsSequence() || classes.size() == 0) {
    error(classes ? classes : node,
          "http.shedding.classes must be a list of priority classes, highest first, each "
          "with a name and max_in_flight");
    return;
  }
  std::optional<size_t> default_class;
  for (size_t i = 0; i < classes.size(); ++i) {
    bool is_default = false;
    std::optional<PriorityClass> c = parsePriorityClass(classes[i], i, is_default);
    if (!c) continue;
    for (const PriorityClass& other : shedding.classes) {
      if (other.name == c->name) {
        error(classes[i]["name"], "priority class '" + c->name + "' is named twice");
      }
    }
    if (is_default) {
      if (default_class) {
        error(classes[i]["default"], "priority class '" + c->name +
                                         "' is a second default; "
                                         "only one class may be the default");
      }
      default_class = shedding.classes.size();
    }
    if (!shedding.classes.empty()) {
      const PriorityClass& above = shedding.classes.back();
      if (c->max_in_flight > above.max_in_flight) {
        error(classes[i]["max_in_flight"],
              "priority class '" + c->name + "' (max_in_flight " +
                  std::to_string(c->max_in_flight) + ") is shed later than '" + above.name +
                  "' above it (" + std::to_string(above.max_in_flight) +
                  "): list classes from highest priority to lowest, each max_in_flight at most "
                  "the one above");
      } else if (shedding.classes.size() == 1 && c->max_in_flight == above.max_in_flight) {
        error(classes[i]["max_in_flight"],
              "priority class '" + above.name +
                  "' keeps no share of its own: its max_in_flight must be above that of '" +
                  c->name + "' (" + std::to_string(c->max_in_flight) + ")");
      }
    }
    shedding.classes.push_back(std::move(*c));
  }
  if (default_class == 0 && shedding.classes.size() > 1) {
    error(classes[0]["default"],
          "priority class '" + shedding.classes[0].name +
              "' is the highest and may not be the default: a request nothing names or "
              "matches would take the share kept for it; mark a lower class default: true");
  }
  // Without a marked default, a request nothing names or matches is of the lowest class:
  // an unknown request never outranks a known one.
  shedding.default_class =
      default_class.value_or(shedding.classes.empty() ? 0 : shedding.classes.size() - 1);
}

// http.adaptive_concurrency: the bounds of a limit on requests in flight that follows the
// service's latency and errors (adaptive_limit.h).
void Parser::parseAdaptive(const YAML::Node& node, AdaptiveConcurrencyConfig& adaptive) {
  const std::string what = "http.adaptive_concurrency";
  if (!requireMap(node, what)) return;
  rejectUnknownKeys(node, what,
                    {"floor", "ceiling", "initial", "tolerance", "window", "window_ms",
                     "error_rate", "probe_every", "retry_after"});
  adaptive.enabled = true;
  auto readCount = [&](const char* key, int64_t& into, int64_t min, int64_t max) {
    if (const YAML::Node v = node[key]) {
      if (auto n = readInt(v, what + "." + key, min, max)) into = *n;
    }
  };
  readCount("floor", adaptive.floor, 1, 1'000'000);
  readCount("ceiling", adaptive.ceiling, 1, 1'000'000);
  readCount("initial", adaptive.initial, 1, 1'000'000);
  readCount("window", adaptive.window, 1, 1'000'000);
  readCount("window_ms", adaptive.window_ms, 1, 60'000);
  readCount("probe_every", adaptive.probe_every, 0, 1'000'000);
  if (const YAML::Node v = node["tolerance"]) {
    if (auto t = readDouble(v, what + ".tolerance", 1, 10)) adaptive.tolerance = *t;
  }
  if (const YAML::Node v = node["error_rate"]) {
    if (auto r = readDouble(v, what + ".error_rate", 0, 1)) adaptive.error_rate = *r;
  }
  if (const YAML::Node v = node["retry_after"]) {
    if (auto ns = readDuration(v, what + ".retry_after", kNsPerS, 3600 * kNsPerS)) {
      adaptive.retry_after_ns = *ns;
    }
  }
  if (adaptive.floor > adaptive.ceiling) {
    error(node["floor"] ? node["floor"] : node, what + ".floor (" + std::to_string(adaptive.floor) +
                                                    ") is above its ceiling (" +
                                                    std::to_string(adaptive.ceiling) + ")");
  }
}

std::optional<PriorityClass> Parser::parsePriorityClass(const YAML::Node& node, size_t index,
                                                        bool& is_default) {
  std::string what = "http.shedding.classes[" + std::to_string(index) + "]";
  if (!requireMap(node, what)) return std::nullopt;
  rejectUnknownKeys(node, what, {"name", "max_in_flight", "match", "default"});
  const size_t errors_before = diagnostics_.size();
  PriorityClass c;
  if (!node["name"]) {
    error(node, what + " needs a name");
  } else if (auto name = readString(node["name"], what + ".name")) {
    if (!std::all_of(name->begin(), name->end(), isNameChar)) {
      error(node["name"],
            "priority class name '" + *name + "' may only hold letters, digits, '_', '-' and '.'");
    }
    c.name = *name;
    what = "priority class '" + *name + "'";
  }
  if (!node["max_in_flight"]) {
    error(node, what + " needs max_in_flight: the requests in flight at which it is shed");
  } else if (auto v = readInt(node["max_in_flight"], what + ".max_in_flight", 1, 1'000'000)) {
    c.max_in_flight = *v;
  }
  if (const YAML::Node match = node["match"]) {
    if (!match.IsSequence()) {
      error(match, what + ".match must be a list of {methods, path_prefix}");
    } else {
      for (size_t i = 0; i < match.size(); ++i) {
        c.match.push_back(parseMatch(match[i], what + ".match[" + std::to_string(i) + "]"));
      }
    }
  }
  if (const YAML::Node d = node["default"]) {
    if (!d.IsScalar() || !YAML::convert<bool>::decode(d, is_default)) {
      error(d, what + ".default must be true or false");
    }
  }
  if (diagnostics_.size() != errors_before) return std::nullopt;
  return c;
}

RouteMatch Parser::parseMatch(const YAML::Node& node, const std::string& what) {
  RouteMatch match;
  if (!requireMap(node, what)) return match;
  rejectUnknownKeys(node, what, {"methods", "path_prefix"});
  if (const YAML::Node methods = node["methods"]) {
    if (!methods.IsSequence()) {
      error(methods, what + ".methods must be a list such as [GET, POST]");
    } else {
      for (const YAML::Node& m : methods) {
        auto method = readString(m, "a method");
        if (!method) continue;
        if (!std::all_of(method->begin(), method->end(),
                         [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })) {
          error(m, "'" + *method + "' is not an HTTP method");
          continue;
        }
        std::transform(method->begin(), method->end(), method->begin(),
                       [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        match.methods.push_back(*method);
      }
    }
  }
  if (const YAML::Node prefix = node["path_prefix"]) {
    if (auto p = readString(prefix, what + ".path_prefix")) {
      if (p->front() != '/') {
        error(prefix, what + ".path_prefix must start with '/', got '" + *p + "'");
      } else {
        match.path_prefix = *p;
      }
    }
  }
  return match;
}

void Parser::parseAlgorithm(const YAML::Node& policy, const std::string& what,
                            AlgorithmParams& params) {
  const YAML::Node algorithm = policy["algorithm"];
  if (!algorithm) {
    error(policy, what +
                      " needs an algorithm (fixed_window, sliding_window_log, "
                      "sliding_window_counter, token_bucket, gcra, leaky_bucket)");
    return;
  }
  auto name = readString(algorithm, what + ".algorithm");
  if (!name) return;
  std::optional<AlgorithmKind> kind = algorithmFromName(*name);
  if (!kind) {
    error(algorithm, "unknown algorithm '" + *name +
                         "' (expected fixed_window, sliding_window_log, sliding_window_counter, "
                         "token_bucket, gcra or leaky_bucket)");
    // Which keys belong depends on the algorithm, but each value given is still checked, so
    // that a bad name hides no other mistake.
    if (const YAML::Node v = policy["limit"]) readInt(v, what + ".limit", 1, kMaxLimit);
    if (const YAML::Node v = policy["window_ms"]) readInt(v, what + ".window_ms", 1, kMaxWindowMs);
    if (const YAML::Node v = policy["capacity"]) readInt(v, what + ".capacity", 1, kMaxLimit);
    if (const YAML::Node v = policy["rate_per_s"]) {
      readDouble(v, what + ".rate_per_s", kMinRatePerS, kMaxRatePerS);
    }
    return;
  }
  params.kind = *kind;
  const bool window = isWindowAlgorithm(*kind);
  const char* wanted = window ? "limit and window_ms" : "capacity and rate_per_s";
  for (std::string_view key : {"limit", "window_ms", "capacity", "rate_per_s"}) {
    bool belongs = window == (key == "limit" || key == "window_ms");
    const YAML::Node value = policy[std::string(key)];
    if (value && !belongs) {
      error(value, *name + " takes " + wanted + ", not " + std::string(key));
    } else if (!value && belongs) {
      error(policy, what + " (" + *name + ") needs " + std::string(key));
    }
  }
  if (window) {
    if (const YAML::Node v = policy["limit"]) {
      if (auto limit = readInt(v, what + ".limit", 1, kMaxLimit)) params.limit = *limit;
    }
    if (const YAML::Node v = policy["window_ms"]) {
      if (auto ms = readInt(v, what + ".window_ms", 1, kMaxWindowMs)) params.window_ms = *ms;
    }
  } else {
    if (const YAML::Node v = policy["capacity"]) {
      if (auto c = readInt(v, what + ".capacity", 1, kMaxLimit)) params.capacity = *c;
    }
    if (const YAML::Node v = policy["rate_per_s"]) {
      if (auto r = readDouble(v, what + ".rate_per_s", kMinRatePerS, kMaxRatePerS)) {
        params.rate_per_s = *r;
      }
    }
  }
}

std::optional<PolicyConfig> Parser::parsePolicy(const YAML::Node& node, size_t index) {
  std::string what = "http.policies[" + std::to_string(index) + "]";
  if (!requireMap(node, what)) return std::nullopt;
  rejectUnknownKeys(node, what,
                    {"name", "match", "key", "algorithm", "limit", "window_ms", "capacity",
                     "rate_per_s", "cost", "routes", "failure_mode", "prefetch", "sync"});
  size_t errors_before = diagnostics_.size();
  PolicyConfig policy;

  if (!node["name"]) {
    error(node, what + " needs a name");
  } else if (auto name = readString(node["name"], what + ".name")) {
    if (!std::all_of(name->begin(), name->end(), isNameChar)) {
      error(node["name"],
            "policy name '" + *name + "' may only hold letters, digits, '_', '-' and '.'");
    }
    policy.name = *name;
    what = "policy '" + *name + "'";
  }

  if (node["match"]) policy.match = parseMatch(node["match"], what + ".match");

  if (!node["key"]) {
    error(node, what + " needs a key (ip, header:NAME or user)");
  } else if (auto key = readString(node["key"], what + ".key")) {
    if (*key == "ip") {
      policy.key.kind = KeyKind::kIp;
    } else if (*key == "user") {
      policy.key.kind = KeyKind::kUser;
    } else if (key->starts_with("header:") && key->size() > 7 &&
               std::all_of(key->begin() + 7, key->end(), isTokenChar)) {
      policy.key.kind = KeyKind::kHeader;
      policy.key.header = key->substr(7);
    } else {
      error(node["key"],
            "key '" + *key + "' must be ip, user or header:NAME (e.g. header:X-API-Key)");
    }
  }

  parseAlgorithm(node, what, policy.algorithm);

  if (node["cost"]) {
    if (auto c = readInt(node["cost"], what + ".cost", 1, kMaxLimit)) policy.cost = *c;
  }
  if (const YAML::Node routes = node["routes"]) {
    if (!routes.IsSequence()) {
      error(routes, what + ".routes must be a list of {match, cost}");
    } else {
      for (size_t i = 0; i < routes.size(); ++i) {
        std::string route_what = what + ".routes[" + std::to_string(i) + "]";
        const YAML::Node route = routes[i];
        if (!requireMap(route, route_what)) continue;
        rejectUnknownKeys(route, route_what, {"match", "cost"});
        RouteCost rc;
        if (route["match"]) {
          rc.match = parseMatch(route["match"], route_what + ".match");
        } else {
          error(route, route_what + " needs a match");
        }
        if (!route["cost"]) {
          error(route, route_what + " needs a cost");
        } else if (auto c = readInt(route["cost"], route_what + ".cost", 1, kMaxLimit)) {
          rc.cost = *c;
        }
        policy.routes.push_back(std::move(rc));
      }
    }
  }
  if (const YAML::Node mode = node["failure_mode"]) {
    if (auto m = readString(mode, what + ".failure_mode")) {
      if (*m == "open") {
        policy.failure_mode = FailureMode::kOpen;
      } else if (*m == "closed") {
        policy.failure_mode = FailureMode::kClosed;
      } else {
        error(mode, what + ".failure_mode must be open or closed, got '" + *m + "'");
      }
    }
  }
  if (const YAML::Node prefetch = node["prefetch"]) {
    parsePrefetch(prefetch, what + ".prefetch", policy, policy.prefetch);
  }
  if (const YAML::Node sync = node["sync"]) {
    parseSync(sync, what + ".sync", policy, policy.sync);
  }
  if (diagnostics_.size() != errors_before) return std::nullopt;
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

HttpConfig parseHttpSection(const YAML::Node& http, const std::string& file,
                            config::Diagnostics& diagnostics) {
  return Parser(file, diagnostics).parse(http);
}

Result<HttpConfig> parseHttpConfigText(const std::string& text, const std::string& file) {
  config::Diagnostics diagnostics;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    diagnostics.add(file, e.mark.line + 1, e.mark.column + 1, e.msg);
    return finish({}, diagnostics);
  }
  if (!root.IsMap() || !root["http"]) {
    diagnostics.add(file, 0, 0, "no top-level 'http:' section to read rate-limit policies from");
    return finish({}, diagnostics);
  }
  HttpConfig config = parseHttpSection(root["http"], file, diagnostics);
  return finish(std::move(config), diagnostics);
}

Result<HttpConfig> loadHttpConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::failure(path + ": cannot read the config file (check the path)");
  std::stringstream text;
  text << in.rdbuf();
  return parseHttpConfigText(text.str(), path);
}

}  // namespace floodgate::http
