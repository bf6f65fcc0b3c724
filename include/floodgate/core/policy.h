// SPDX-License-Identifier: MIT
// The `http:` section of the config as data: trusted proxies, the store, and the policies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "floodgate/core/adaptive_limit.h"
#include "floodgate/core/algorithm.h"
#include "floodgate/core/client_ip.h"
#include "floodgate/core/ip_address.h"
#include "floodgate/report/escalate_config.h"

namespace floodgate::http {

// Which requests a policy (or a route cost) applies to. Methods are upper case; empty means
// every method; GET listed matches HEAD too, which runs the same handler. The path prefix matches
// whole segments: "/api" matches "/api" and
// "/api/users" but not "/apis"; a prefix ending in "/" matches anything below it.
struct RouteMatch {
  std::vector<std::string> methods;
  std::string path_prefix = "/";  // a normal path (isNormalPath)

  // `path` in normal form (normalPath): the limiter normalises a request's once.
  bool matches(std::string_view method, std::string_view path) const;
  bool operator==(const RouteMatch&) const = default;
};

// What identifies the client for a policy: its IP address (through trusted proxies), the
// value of a request header (an API key), or a user id the service passes in.
enum class KeyKind { kIp, kHeader, kUser };
struct KeySpec {
  KeyKind kind = KeyKind::kIp;
  std::string header;  // kHeader only
  // kIp only: a policy over whole prefixes of clients (a /24 of a botnet, an IPv6 /48 one
  // subscriber rotates /64s in), keyed "192.0.2.0/24"; 32, and 0 (http.ipv6_prefix): each
  // client on its own
  int ipv4_prefix = 32;
  int ipv6_prefix = 0;

  bool operator==(const KeySpec&) const = default;
};

// A route that costs more (or less) than the policy's default cost.
struct RouteCost {
  RouteMatch match;
  int64_t cost = 1;
};

// What to do when the store cannot answer (a shared store is down): open admits, closed
// rejects. The in-memory store always answers.
enum class FailureMode { kOpen, kClosed };

// The longest key that can be hot (the longest Redis keeps as it is): the prefetch tables
// hold no more a key, whatever keys clients send.
inline constexpr size_t kMaxHotKeyBytes = 200;

// Hot-key prefetch (Redis store only): lease `batch` units per round trip for hot keys.
struct PrefetchConfig {
  bool enabled = false;
  int64_t batch = 8;
  std::vector<std::string> hot_keys;  // always hot
  int64_t detect_per_s = 0;           // also hot: keys decided this often per second; 0 off
  int64_t lease_ms = 1000;            // buckets: unspent leased units lapse after this

  bool operator==(const PrefetchConfig&) const = default;
};

// Local buckets reconciled with Redis (Redis store only, see SyncStore): every decision
// from this instance's share, the shares corrected every `interval_ms`.
struct SyncConfig {
  bool enabled = false;
  int64_t interval_ms = 200;

  bool operator==(const SyncConfig&) const = default;
};

struct PolicyConfig {
  std::string name;  // letters, digits, '_', '-', '.'; unique; shown in headers
  RouteMatch match;
  KeySpec key;
  AlgorithmParams algorithm;
  int64_t cost = 1;               // cost of a matching request; the first matching route wins
  std::vector<RouteCost> routes;  // per-route costs
  FailureMode failure_mode = FailureMode::kOpen;
  PrefetchConfig prefetch;
  SyncConfig sync;

  // The cost of a request this policy matches; `path` in normal form, as for matches().
  int64_t costFor(std::string_view method, std::string_view path) const;
};

struct StoreConfig {
  std::string type = "memory";  // memory | redis
  int64_t max_keys = 100'000;   // per policy (memory; for redis, of the open-mode fallback)
  int shards = 64;
  // type: redis. One server (address) or a cluster (any of its masters).
  std::string address;
  std::vector<std::string> cluster;
  int64_t timeout_ms = 50;  // per decision: connect, send, read
  int64_t pool_size = 16;   // idle connections kept per server
  // The fewest instances a local share (an open-mode fallback, a sync share) divides the
  // limit by; with type redis they divide by the live count when it is higher (heartbeats).
  int64_t instances = 1;
  int64_t heartbeat_ms = 1000;         // how often an instance says it is alive
  int64_t heartbeat_expire_ms = 3000;  // silent this long: no longer counted
  // Not in the YAML: this instance's name in the count; empty means the process's own id
  // (tests run several instances in one process).
  std::string instance_id;
  int64_t breaker_failures = 3;
  int64_t breaker_open_ms = 1000;
  std::string prefix = "fg";  // Redis key prefix
  // A Redis that asks for a login: the ACL user (empty: requirepass's default user), and the
  // file of the password, read when the config is parsed.
  std::string username;
  std::string password_file;
  std::string password;

  bool operator==(const StoreConfig&) const = default;
};

// http.escalate: see floodgate/report/escalate_config.h (the report protocol's own module).
using EscalateConfig = report::EscalateConfig;

// Handing the policies to services: `floodgate run` (and `floodgate http publish`) writes
// the section, with a version, to `file` (atomically: services on this host follow it) and,
// with the redis store, SETs it at `redis_key` and PUBLISHes the version on `redis_channel`
// (a fleet follows that), signed with the fleet's secret: `secret_file`'s, or else
// http.escalate.secret_file's. See floodgate/fleet/policy_publisher.h.
struct PublishConfig {
  std::string file;           // absolute path; empty: no file
  std::string redis_key;      // empty: not to Redis
  std::string redis_channel;  // defaults to redis_key
  std::string secret_file;    // empty: http.escalate.secret_file signs
  std::string secret;         // what signs (resolved when the config is parsed)

  bool enabled() const { return !file.empty() || !redis_key.empty(); }
};

// A priority class for load shedding: which requests it holds, and the requests in flight
// on this instance (of every class) at which its own are refused with 503.
struct PriorityClass {
  std::string name;               // letters, digits, '_', '-', '.'; unique
  std::vector<RouteMatch> match;  // requests any of these match (first class wins)
  int64_t max_in_flight = 0;      // refused once this many requests are in flight

  bool operator==(const PriorityClass&) const = default;
};

// Priority load shedding (http.shedding): when the requests in flight pass a class's
// threshold, that class is refused, lowest first; the highest class's threshold is above
// every other's, so it keeps a reserved share the others cannot take. A request's class is
// the one the service names (HttplibOptions::priority_of), else the one the header
// `priority_header` names when a trusted proxy sent it, else the first class whose `match`
// matches, else `default_class`.
struct SheddingConfig {
  std::vector<PriorityClass> classes;  // highest priority first; empty: no shedding
  size_t default_class = 0;            // index into classes
  std::string priority_header;         // empty: none is read
  uint64_t retry_after_ns = 1'000'000'000;

  bool enabled() const { return !classes.empty(); }
  bool operator==(const SheddingConfig&) const = default;
};

// The spread of Retry-After unless http.retry_after_jitter says: a tenth of the wait, and
// at least a second either way.
inline constexpr double kDefaultRetryAfterJitter = 0.1;

// IPv6 clients are keyed by a prefix of this many bits unless http.ipv6_prefix says.
inline constexpr int kDefaultIpv6Prefix = 64;

struct HttpConfig {
  std::vector<IpPrefix> trusted_proxies;
  ClientHeader client_header = ClientHeader::kNone;  // read only from trusted proxies
  int ipv6_prefix = kDefaultIpv6Prefix;              // 32 to 128
  StoreConfig store;
  std::vector<PolicyConfig> policies;
  EscalateConfig escalate;
  PublishConfig publish;
  SheddingConfig shedding;
  AdaptiveConcurrencyConfig adaptive_concurrency;
  // Refused clients are told Retry-After ceil(wait) plus 0 to ceil(this × that) whole
  // seconds at random, so that clients refused together do not all come back together.
  double retry_after_jitter = kDefaultRetryAfterJitter;
};

}  // namespace floodgate::http
