// SPDX-License-Identifier: MIT
// The `http:` section: what a valid one yields, and file:line:column for what is wrong.
#include "floodgate/core/config_parser.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace floodgate::http {
namespace {

constexpr const char* kValid = R"(interfaces:
  - eth0
rules: whatever the XDP side wants
http:
  trusted_proxies: [10.0.0.0/8, "::1"]
  client_header: x-forwarded-for
  store:
    type: memory
    max_keys: 5000
    shards: 8
  policies:
    - name: per-key
      match:
        methods: [get, POST]
        path_prefix: /api
      key: header:X-API-Key
      algorithm: token_bucket
      capacity: 100
      rate_per_s: 1.5
      cost: 2
      routes:
        - match: {path_prefix: /api/export}
          cost: 20
      failure_mode: closed
    - name: per-ip
      key: ip
      algorithm: sliding_window_counter
      limit: 600
      window_ms: 60000
)";

TEST(HttpConfig, ParsesAValidSectionAndIgnoresOtherTopLevelKeys) {
  auto config = parseHttpConfigText(kValid, "floodgate.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->trusted_proxies.size(), 2u);
  EXPECT_EQ(config->store.max_keys, 5000);
  EXPECT_EQ(config->store.shards, 8);
  ASSERT_EQ(config->policies.size(), 2u);
  const PolicyConfig& key = config->policies[0];
  EXPECT_EQ(key.name, "per-key");
  EXPECT_EQ(key.match.methods, (std::vector<std::string>{"GET", "POST"}));
  EXPECT_EQ(key.key.kind, KeyKind::kHeader);
  EXPECT_EQ(key.key.header, "X-API-Key");
  EXPECT_EQ(key.algorithm.kind, AlgorithmKind::kTokenBucket);
  EXPECT_EQ(key.algorithm.capacity, 100);
  EXPECT_DOUBLE_EQ(key.algorithm.rate_per_s, 1.5);
  EXPECT_EQ(key.failure_mode, FailureMode::kClosed);
  EXPECT_EQ(key.costFor("GET", "/api/items"), 2);
  EXPECT_EQ(key.costFor("GET", "/api/export/all"), 20);
  const PolicyConfig& ip = config->policies[1];
  EXPECT_EQ(ip.key.kind, KeyKind::kIp);
  EXPECT_EQ(ip.algorithm.limit, 600);
  EXPECT_EQ(ip.algorithm.window_ms, 60000);
  EXPECT_EQ(ip.match.path_prefix, "/");
}

// The first reported line, to compare against an expected `file:line:column: message`.
std::string firstError(const std::string& yaml) {
  auto config = parseHttpConfigText(yaml, "f.yaml");
  if (config.ok()) return "(no error)";
  const std::string& text = config.error().message;
  return text.substr(0, text.find('\n'));
}

TEST(HttpConfig, UnknownAlgorithmPointsAtTheValue) {
  EXPECT_EQ(firstError("http:\n  policies:\n    - name: a\n      key: ip\n"
                       "      algorithm: leaky\n      capacity: 1\n      rate_per_s: 1\n"),
            "f.yaml:5:18: unknown algorithm 'leaky' (expected fixed_window, sliding_window_log, "
            "sliding_window_counter, token_bucket, gcra or leaky_bucket)");
}

// A second document would be dropped whole, and with it the policies pasted after it.
TEST(HttpConfig, ASecondYamlDocumentIsAnError) {
  const std::string policy =
      "http:\n  policies:\n    - name: a\n      key: ip\n"
      "      algorithm: gcra\n      capacity: 1\n      rate_per_s: 1\n";
  EXPECT_EQ(firstError(policy + "---\nhttp: {policies: []}\n").substr(0, 48),
            "f.yaml:9:1: a second YAML document starts here; ");
  // a marker with nothing after it, or only comments, is one document still
  EXPECT_EQ(firstError("---\n" + policy + "...\n# end\n"), "(no error)");
}

TEST(HttpConfig, WrongParameterForTheAlgorithm) {
  EXPECT_EQ(firstError("http:\n  policies:\n    - name: a\n      key: ip\n"
                       "      algorithm: gcra\n      limit: 5\n      capacity: 1\n"
                       "      rate_per_s: 1\n"),
            "f.yaml:6:14: gcra takes capacity and rate_per_s, not limit");
}

// Buckets run in thousandths of a unit a second: 0.0015 would run as 0.002, a third faster
// than written (a login bucket's slow rate above all), so it is refused, not rounded.
TEST(HttpConfig, ARateFinerThanAThousandthIsRefused) {
  const std::string policy =
      "http:\n  policies:\n    - name: a\n      key: ip\n"
      "      algorithm: token_bucket\n      capacity: 5\n      rate_per_s: ";
  EXPECT_EQ(firstError(policy + "0.0015\n"),
            "f.yaml:7:19: policy 'a'.rate_per_s is counted in thousandths of a unit a second: "
            "write at most three decimals (got 0.0015)");
  for (const char* fine : {"0.003", "0.001", "1.5", "2.25", "1000000", "0.1"}) {
    EXPECT_EQ(firstError(policy + fine + "\n"), "(no error)") << fine;
  }
}

TEST(HttpConfig, MissingParameterPointsAtThePolicy) {
  EXPECT_EQ(firstError("http:\n  policies:\n    - name: a\n      key: ip\n"
                       "      algorithm: fixed_window\n      limit: 5\n"),
            "f.yaml:3:7: policy 'a' (fixed_window) needs window_ms");
}

TEST(HttpConfig, OutOfRangeAndBadTypes) {
  EXPECT_EQ(firstError("http:\n  policies:\n    - name: a\n      key: ip\n"
                       "      algorithm: fixed_window\n      limit: 0\n      window_ms: 1000\n"),
            "f.yaml:6:14: policy 'a'.limit must be from 1 to 1000000, got 0");
  EXPECT_EQ(firstError("http:\n  store:\n    max_keys: lots\n"),
            "f.yaml:3:15: http.store.max_keys must be a whole number from 1 to 1000000000 (got "
            "'lots')");
}

TEST(HttpConfig, BadKeyProxyAndUnknownField) {
  EXPECT_EQ(firstError("http:\n  policies:\n    - name: a\n      key: cookie\n"
                       "      algorithm: gcra\n      capacity: 1\n      rate_per_s: 1\n"),
            "f.yaml:4:12: key 'cookie' must be ip, user or header:NAME (e.g. header:X-API-Key)");
  EXPECT_EQ(firstError("http:\n  trusted_proxies: [10.0.0.0/8, 300.1.1.1]\n"),
            "f.yaml:2:33: '300.1.1.1' is not an address or CIDR prefix (e.g. 10.0.0.0/8, ::1)");
  EXPECT_EQ(firstError("http:\n  polices: []\n"),
            "f.yaml:2:3: unknown key 'polices' in http (expected trusted_proxies, "
            "client_header, ipv6_prefix, store, policies, escalate, publish, shedding, "
            "retry_after_jitter, adaptive_concurrency)");
}

TEST(HttpConfig, PrefixesGroupClientsOfAnIpKeyOnly) {
  auto config = parseHttpConfigText(
      "http:\n  policies:\n    - {name: a, key: ip, ipv4_prefix: 24, ipv6_prefix: 48,\n"
      "       algorithm: gcra, capacity: 1, rate_per_s: 1}\n",
      "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->policies[0].key.ipv4_prefix, 24);
  EXPECT_EQ(config->policies[0].key.ipv6_prefix, 48);
  EXPECT_EQ(firstError("http:\n  policies:\n    - {name: a, key: user, ipv4_prefix: 24,\n"
                       "       algorithm: gcra, capacity: 1, rate_per_s: 1}\n"),
            "f.yaml:3:41: policy 'a'.ipv4_prefix groups clients by address: it needs key: ip");
  EXPECT_EQ(firstError("http:\n  policies:\n    - {name: a, key: ip, ipv6_prefix: 16,\n"
                       "       algorithm: gcra, capacity: 1, rate_per_s: 1}\n"),
            "f.yaml:3:39: policy 'a'.ipv6_prefix must be from 32 to 128, got 16");
  EXPECT_EQ(firstError("http:\n  ipv6_prefix: 56\n  policies:\n"
                       "    - {name: a, key: ip, ipv6_prefix: 64,\n"
                       "       algorithm: gcra, capacity: 1, rate_per_s: 1}\n"),
            "f.yaml:4:39: policy 'a'.ipv6_prefix 64 is longer than http.ipv6_prefix (56): a "
            "client rotating addresses inside its /56 would get a bucket per address; give at "
            "most 56");
}

TEST(HttpConfig, TheClientHeaderIsChosenNeverGuessed) {
  auto config = parseHttpConfigText(
      "http:\n  trusted_proxies: [10.0.0.0/8]\n  client_header: Forwarded\n  ipv6_prefix: 56\n",
      "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->client_header, ClientHeader::kForwarded);
  EXPECT_EQ(config->ipv6_prefix, 56);
  auto plain = parseHttpConfigText("http:\n  policies: []\n", "f.yaml");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->client_header, ClientHeader::kNone);
  EXPECT_EQ(plain->ipv6_prefix, 64);

  EXPECT_EQ(firstError("http:\n  trusted_proxies: [10.0.0.0/8]\n"),
            "f.yaml:2:20: http.trusted_proxies needs http.client_header: the header those "
            "proxies name the client in (x-forwarded-for behind nginx or HAProxy, forwarded, or "
            "x-real-ip)");
  EXPECT_EQ(firstError("http:\n  client_header: x-forwarded-for\n"),
            "f.yaml:2:18: http.client_header is read only from http.trusted_proxies: list the "
            "proxies in front of the service, or set client_header: none");
  EXPECT_EQ(firstError("http:\n  trusted_proxies: [10.0.0.1]\n  client_header: true-client-ip\n"),
            "f.yaml:3:18: http.client_header 'true-client-ip' must be one of x-forwarded-for, "
            "forwarded, x-real-ip or none");
  EXPECT_EQ(firstError("http:\n  ipv6_prefix: 16\n"),
            "f.yaml:2:16: http.ipv6_prefix must be from 32 to 128, got 16");
}

TEST(HttpConfig, SheddingClassesGoFromHighestToLowestWithAShareKeptForTheFirst) {
  auto config = parseHttpConfigText(R"(http:
  trusted_proxies: [10.0.0.0/8]
  client_header: x-forwarded-for
  shedding:
    retry_after: 5s
    priority_header: X-Priority
    classes:
      - name: critical
        max_in_flight: 64
        match:
          - {methods: [post], path_prefix: /api/orders}
      - {name: normal, max_in_flight: 48, default: true}
      - {name: bulk, max_in_flight: 16, match: [{path_prefix: /api/reports}]}
)",
                                    "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  const SheddingConfig& s = config->shedding;
  ASSERT_EQ(s.classes.size(), 3u);
  EXPECT_EQ(s.classes[0].name, "critical");
  EXPECT_EQ(s.classes[0].max_in_flight, 64);
  ASSERT_EQ(s.classes[0].match.size(), 1u);
  EXPECT_EQ(s.classes[0].match[0].methods, std::vector<std::string>{"POST"});
  EXPECT_EQ(s.classes[2].match[0].path_prefix, "/api/reports");
  EXPECT_EQ(s.default_class, 1u);
  EXPECT_EQ(s.priority_header, "X-Priority");
  EXPECT_EQ(s.retry_after_ns, 5'000'000'000u);
  EXPECT_FALSE(parseHttpConfigText("http:\n  policies: []\n", "f.yaml")->shedding.enabled());

  const std::string head = "http:\n  shedding:\n    classes:\n";
  EXPECT_EQ(firstError(head + "      - {name: a, max_in_flight: 8}\n"
                              "      - {name: b, max_in_flight: 9}\n"),
            "f.yaml:5:34: priority class 'b' (max_in_flight 9) is shed later than 'a' above it "
            "(8): list classes from highest priority to lowest, each max_in_flight at most the "
            "one above");
  EXPECT_EQ(firstError(head + "      - {name: a, max_in_flight: 8}\n"
                              "      - {name: b, max_in_flight: 8}\n"),
            "f.yaml:5:34: priority class 'a' keeps no share of its own: its max_in_flight must "
            "be above that of 'b' (8)");
  EXPECT_EQ(firstError(head + "      - {name: a, max_in_flight: 8}\n"
                              "      - {name: a, max_in_flight: 4}\n"),
            "f.yaml:5:16: priority class 'a' is named twice");
  EXPECT_EQ(firstError(head + "      - {name: a, max_in_flight: 8, default: true}\n"
                              "      - {name: b, max_in_flight: 4, default: true}\n"),
            "f.yaml:5:46: priority class 'b' is a second default; only one class may be the "
            "default");
  EXPECT_EQ(firstError(head + "      - {name: a, max_in_flight: 8, default: true}\n"
                              "      - {name: b, max_in_flight: 4}\n"),
            "f.yaml:4:46: priority class 'a' is the highest and may not be the default: a "
            "request nothing names or matches would take the share kept for it; mark a lower "
            "class default: true");
  EXPECT_EQ(firstError(head + "      - {name: a}\n"),
            "f.yaml:4:9: priority class 'a' needs max_in_flight: the requests in flight at which "
            "it is shed");
  EXPECT_EQ(firstError(head + "      - {name: a, max_in_flight: 0}\n"),
            "f.yaml:4:34: priority class 'a'.max_in_flight must be from 1 to 1000000, got 0");
  EXPECT_EQ(firstError("http:\n  shedding:\n    classes: []\n"),
            "f.yaml:3:14: http.shedding.classes must be a list of priority classes, highest "
            "first, each with a name and max_in_flight");
  // A client could name its own priority if any peer's header were read.
  EXPECT_EQ(firstError("http:\n  shedding:\n    priority_header: x-priority\n    classes:\n"
                       "      - {name: a, max_in_flight: 8}\n"),
            "f.yaml:3:22: http.shedding.priority_header is read only from http.trusted_proxies (a "
            "client could name its own priority): list the proxies that set it, or remove it");
  EXPECT_EQ(firstError("http:\n  shedding:\n    retry_after: 10ms\n    classes:\n"
                       "      - {name: a, max_in_flight: 8}\n"),
            "f.yaml:3:18: http.shedding.retry_after must be from 1s to 1h, got 10ms");
}

TEST(HttpConfig, AdaptiveConcurrencyBoundsAreChecked) {
  auto config = parseHttpConfigText(R"(http:
  adaptive_concurrency:
    floor: 8
    ceiling: 400
    initial: 32
    tolerance: 1.5
    retry_after: 3s
)",
                                    "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  const AdaptiveConcurrencyConfig& a = config->adaptive_concurrency;
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.floor, 8);
  EXPECT_EQ(a.ceiling, 400);
  EXPECT_EQ(a.initial, 32);
  EXPECT_EQ(a.tolerance, 1.5);
  EXPECT_EQ(a.retry_after_ns, 3'000'000'000u);
  EXPECT_FALSE(
      parseHttpConfigText("http:\n  policies: []\n", "f.yaml")->adaptive_concurrency.enabled);
  EXPECT_EQ(firstError("http:\n  adaptive_concurrency: {floor: 50, ceiling: 10}\n"),
            "f.yaml:2:33: http.adaptive_concurrency.floor (50) is above its ceiling (10)");
  EXPECT_EQ(firstError("http:\n  adaptive_concurrency: {tolerance: 0.5}\n"),
            "f.yaml:2:37: http.adaptive_concurrency.tolerance must be from 1 to 10, got 0.5");
}

TEST(HttpConfig, EscalateNamesWhoMayReportAndHowOften) {
  auto config = parseHttpConfigText(
      "http:\n  escalate: {rejections: 5, within: 10s, ban: 1m, socket_group: floodgate,\n"
      "    reporter_users: [www-data], reporter_groups: [web], max_bans_per_minute: 7,\n"
      "    max_stream_bans_per_minute: 30, max_bans_per_network_per_minute: 4}\n",
      "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->escalate.socket_group, "floodgate");
  EXPECT_EQ(config->escalate.reporter_users, std::vector<std::string>{"www-data"});
  EXPECT_EQ(config->escalate.reporter_groups, std::vector<std::string>{"web"});
  EXPECT_EQ(config->escalate.max_bans_per_minute, 7);
  EXPECT_EQ(config->escalate.max_stream_bans_per_minute, 30);
  EXPECT_EQ(config->escalate.max_bans_per_network_per_minute, 4);
  EXPECT_EQ(
      parseHttpConfigText("http:\n  escalate: {rejections: 5, within: 10s, ban: 1m}\n", "f.yaml")
          ->escalate.max_bans_per_network_per_minute,
      10)
      << "the default";
  EXPECT_EQ(firstError("http:\n  escalate: {rejections: 5, within: 10s, ban: 1m,\n"
                       "    max_bans_per_network_per_minute: 0}\n"),
            "f.yaml:3:38: http.escalate.max_bans_per_network_per_minute must be from 1 to "
            "1000000, got 0");
  EXPECT_EQ(
      firstError("http:\n  escalate: {rejections: 5, within: 10s, ban: 1m,\n"
                 "    reporter_users: [\"root;rm\"]}\n"),
      "f.yaml:3:22: http.escalate.reporter_users entry 'root;rm' is not a user or group name");
}

TEST(HttpConfig, EscalateHandsRepeatOffendersToTheController) {
  auto config = parseHttpConfigText(
      "http:\n  escalate: {rejections: 50, within: 10s, ban: 10m, socket: /run/fg/r.sock}\n",
      "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(config->escalate.enabled);
  EXPECT_EQ(config->escalate.rejections, 50);
  EXPECT_EQ(config->escalate.within_ms, 10000);
  EXPECT_EQ(config->escalate.ban_ns, 600'000'000'000ULL);
  EXPECT_EQ(config->escalate.socket, "/run/fg/r.sock");
  EXPECT_EQ(firstError("http:\n  escalate: {rejections: 50, within: 10s}\n"),
            "f.yaml:2:13: http.escalate needs ban (e.g. {rejections: 50, within: 10s, ban: 10m})");
  EXPECT_EQ(firstError("http:\n  escalate: {rejections: 0, within: 10s, ban: 10m}\n"),
            "f.yaml:2:26: http.escalate.rejections must be from 1 to 1000000, got 0");
  EXPECT_EQ(
      firstError("http:\n  escalate: {rejections: 5, within: soon, ban: 10m}\n"),
      "f.yaml:2:37: http.escalate.within: 'soon' is not a duration (expected e.g. 500ms, 30s, "
      "10m or 1h)");
  EXPECT_EQ(firstError("http:\n  escalate: {rejections: 5, within: 10s, ban: 2d}\n"),
            "f.yaml:2:47: http.escalate.ban must be from 1s to 1d, got 2d");
  EXPECT_EQ(firstError("http:\n  escalate: {rejections: 5, within: 10s, ban: 1m, socket: x}\n"),
            "f.yaml:2:59: http.escalate.socket must be an absolute path shorter than 108 "
            "characters (a Unix socket address)");
}

TEST(HttpConfig, EscalateThroughARedisStreamNeedsTheRedisStoreAndASecret) {
  char dir[] = "/tmp/fg-config-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string secret = std::string(dir) + "/reports.key";
  std::ofstream(secret) << "0123456789abcdef0123456789abcdef\n";
  ASSERT_EQ(chmod(secret.c_str(), 0600), 0);
  const std::string redis = "http:\n  store: {type: redis, address: 127.0.0.1:6379}\n";
  auto config = parseHttpConfigText(
      redis +
          "  escalate: {rejections: 5, within: 10s, ban: 1m, redis_stream: fg:reports, "
          "secret_file: " +
          secret + "}\n",
      "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(config->escalate.enabled);
  EXPECT_EQ(config->escalate.redis_stream, "fg:reports");
  EXPECT_EQ(config->escalate.secret, "0123456789abcdef0123456789abcdef");

  EXPECT_EQ(firstError("http:\n  escalate: {rejections: 5, within: 10s, ban: 1m, "
                       "redis_stream: fg:reports, secret_file: " +
                       secret + "}\n"),
            "f.yaml:2:65: http.escalate.redis_stream needs http.store of type redis (its servers "
            "hold the stream)");
  EXPECT_EQ(firstError(redis + "  escalate: {rejections: 5, within: 10s, ban: 1m, "
                               "redis_stream: fg:reports}\n"),
            "f.yaml:3:13: http.escalate.redis_stream needs secret_file: PATH, a secret shared by "
            "the fleet that signs every report (anyone able to write to Redis could ban "
            "addresses otherwise)");
  EXPECT_EQ(firstError(redis + "  escalate: {rejections: 5, within: 10s, ban: 1m, "
                               "redis_stream: s, secret_file: reports.key}\n"),
            "f.yaml:3:81: http.escalate.secret_file must be an absolute path, got 'reports.key'");
  EXPECT_NE(firstError(redis + "  escalate: {rejections: 5, within: 10s, ban: 1m, "
                               "redis_stream: s, secret_file: /nonexistent/k}\n")
                .find("/nonexistent/k does not exist"),
            std::string::npos);
  EXPECT_EQ(firstError(redis +
                       "  escalate: {rejections: 5, within: 10s, ban: 1m, "
                       "secret_file: " +
                       secret + "}\n"),
            "f.yaml:3:64: http.escalate.secret_file signs reports to a Redis stream: add "
            "redis_stream: KEY, or drop secret_file");
  std::filesystem::remove_all(dir);
}

TEST(HttpConfig, DuplicateNamesAndUnknownStore) {
  std::string policy =
      "    - name: twice\n      key: ip\n      algorithm: gcra\n"
      "      capacity: 1\n      rate_per_s: 1\n";
  EXPECT_EQ(firstError("http:\n  policies:\n" + policy + policy),
            "f.yaml:8:13: policy name 'twice' is used twice; names must be unique (they appear "
            "in RateLimit headers)");
  EXPECT_EQ(firstError("http:\n  store:\n    type: memcached\n"),
            "f.yaml:3:11: store type 'memcached' is not known; use 'memory' or 'redis'");
}

TEST(HttpConfig, ParsesTheRedisStoreAndPrefetch) {
  auto config = parseHttpConfigText(
      "http:\n  store:\n    type: redis\n    cluster: [10.0.0.1:7000, '[::1]:7001']\n"
      "    timeout_ms: 20\n    instances: 4\n    breaker: {failures: 5, open_ms: 250}\n"
      "  policies:\n    - name: login\n      key: ip\n      algorithm: fixed_window\n"
      "      limit: 5\n      window_ms: 60000\n      failure_mode: closed\n"
      "      prefetch: {batch: 16, hot_keys: [10.1.1.1], detect_per_s: 500}\n",
      "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->store.type, "redis");
  EXPECT_EQ(config->store.cluster.size(), 2u);
  EXPECT_EQ(config->store.timeout_ms, 20);
  EXPECT_EQ(config->store.instances, 4);
  EXPECT_EQ(config->store.breaker_failures, 5);
  EXPECT_EQ(config->store.breaker_open_ms, 250);
  const PolicyConfig& login = config->policies[0];
  EXPECT_EQ(login.failure_mode, FailureMode::kClosed);
  EXPECT_TRUE(login.prefetch.enabled);
  EXPECT_EQ(login.prefetch.batch, 16);
  EXPECT_EQ(login.prefetch.hot_keys, std::vector<std::string>{"10.1.1.1"});
  EXPECT_EQ(login.prefetch.detect_per_s, 500);
}

TEST(HttpConfig, ParsesHeartbeatAndSync) {
  auto config = parseHttpConfigText(
      "http:\n  store:\n    type: redis\n    address: 10.0.0.1:6379\n"
      "    heartbeat: {interval_ms: 500, expire_ms: 2000}\n"
      "  policies:\n    - name: api\n      key: ip\n      algorithm: token_bucket\n"
      "      capacity: 100\n      rate_per_s: 10\n      sync: {interval_ms: 250}\n",
      "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->store.heartbeat_ms, 500);
  EXPECT_EQ(config->store.heartbeat_expire_ms, 2000);
  EXPECT_TRUE(config->policies[0].sync.enabled);
  EXPECT_EQ(config->policies[0].sync.interval_ms, 250);
}

TEST(HttpConfig, HeartbeatAndSyncMistakesPointAtTheValue) {
  const std::string redis = "http:\n  store:\n    type: redis\n    address: 10.0.0.1:6379\n";
  EXPECT_EQ(firstError(redis + "    heartbeat: {interval_ms: 1000, expire_ms: 1500}\n"),
            "f.yaml:5:47: http.store.heartbeat.expire_ms must be at least twice interval_ms "
            "(2000), or one late beat drops a live instance");
  EXPECT_EQ(firstError("http:\n  store:\n    heartbeat: {interval_ms: 100}\n"),
            "f.yaml:3:16: http.store.heartbeat applies only to type: redis");
  const std::string policy = "  policies:\n    - name: a\n      key: ip\n";
  EXPECT_EQ(firstError(redis + policy +
                       "      algorithm: sliding_window_log\n      limit: 5\n"
                       "      window_ms: 1000\n      sync: {interval_ms: 100}\n"),
            "f.yaml:11:13: policy 'a'.sync works with fixed_window, token_bucket and gcra, "
            "not sliding_window_log");
  EXPECT_EQ(firstError(redis + policy +
                       "      algorithm: fixed_window\n      limit: 5\n"
                       "      window_ms: 1000\n      sync: {interval_ms: 600}\n"),
            "f.yaml:11:27: policy 'a'.sync.interval_ms must be at most half the window (500 ms), "
            "or a share is stale before it is spent");
  EXPECT_EQ(firstError("http:\n" + policy +
                       "      algorithm: gcra\n      capacity: 5\n      rate_per_s: 1\n"
                       "      sync: {interval_ms: 100}\n"),
            "f.yaml:8:13: policy 'a'.sync needs the redis store (it reconciles local shares "
            "through Redis)");
  EXPECT_EQ(firstError(redis + policy +
                       "      algorithm: gcra\n      capacity: 5\n      rate_per_s: 1\n"
                       "      prefetch: {hot_keys: [k]}\n      sync: {interval_ms: 100}\n"),
            "f.yaml:12:13: policy 'a'.sync and prefetch do not go together (every decision "
            "is local already)");
  // a hot key longer than a prefetch table holds would never be hot: refused, not ignored
  const std::string long_key(201, 'k');
  EXPECT_EQ(firstError(redis + policy +
                       "      algorithm: gcra\n      capacity: 5\n      rate_per_s: 1\n"
                       "      prefetch: {hot_keys: [" +
                       long_key + "]}\n"),
            "f.yaml:11:29: policy 'a'.prefetch.hot_keys holds a key of 201 bytes, more than the "
            "200 a hot key may have: leave it out (it is decided in Redis)");
}

TEST(HttpConfig, RedisStoreMistakesPointAtTheValue) {
  EXPECT_EQ(firstError("http:\n  store:\n    type: redis\n"),
            "f.yaml:3:5: http.store of type redis needs address: HOST:PORT or cluster: "
            "[HOST:PORT, ...]");
  EXPECT_EQ(firstError("http:\n  store:\n    type: redis\n    address: localhost\n"),
            "f.yaml:4:14: http.store.address: 'localhost' must be HOST:PORT or unix:/PATH, e.g. "
            "127.0.0.1:6379");
  EXPECT_EQ(firstError("http:\n  store:\n    type: redis\n    address: unix:redis.sock\n"),
            "f.yaml:4:14: http.store.address: 'unix:redis.sock': a Unix socket must be an "
            "absolute path, e.g. unix:/run/redis/redis.sock");
  EXPECT_EQ(firstError("http:\n  store:\n    type: redis\n    address: unix:/" +
                       std::string(107, 'a') + "\n"),
            "f.yaml:4:14: http.store.address: 'unix:/" + std::string(107, 'a') +
                "': a Unix socket's path must be at most 107 bytes, without NUL");
  EXPECT_EQ(firstError("http:\n  store:\n    type: redis\n    address: unix:/run/r.sock\n"),
            "(no error)");
  EXPECT_EQ(firstError("http:\n  store:\n    type: redis\n    address: a:1\n"
                       "    timeout_ms: 0\n"),
            "f.yaml:5:17: http.store.timeout_ms must be from 1 to 60000, got 0");
  EXPECT_EQ(firstError("http:\n  store:\n    timeout_ms: 5\n"),
            "f.yaml:3:17: http.store.timeout_ms applies only to type: redis");
  std::string redis = "http:\n  store: {type: redis, address: 'a:1'}\n  policies:\n";
  EXPECT_EQ(
      firstError(redis + "    - name: a\n      key: ip\n      algorithm: sliding_window_log\n"
                         "      limit: 5\n      window_ms: 1000\n      prefetch: {batch: 8}\n"),
      "f.yaml:9:17: policy 'a'.prefetch works with fixed_window, token_bucket and gcra, "
      "not sliding_window_log");
  EXPECT_EQ(
      firstError(redis + "    - name: a\n      key: ip\n      algorithm: gcra\n"
                         "      capacity: 5\n      rate_per_s: 1\n      prefetch: {batch: 8}\n"),
      "f.yaml:9:17: policy 'a'.prefetch needs hot_keys or detect_per_s (which keys to lease "
      "for)");
  EXPECT_EQ(firstError("http:\n  policies:\n    - name: a\n      key: ip\n      algorithm: gcra\n"
                       "      capacity: 5\n      rate_per_s: 1\n      prefetch: {hot_keys: [x]}\n"),
            "f.yaml:8:17: policy 'a'.prefetch needs the redis store (a memory store has no round "
            "trips to save)");
}

TEST(HttpConfig, ReportsEveryProblemNotJustTheFirst) {
  auto config = parseHttpConfigText(
      "http:\n  store: {shards: 0}\n  policies:\n    - name: 'bad name'\n      key: ip\n"
      "      algorithm: gcra\n      capacity: 1\n      rate_per_s: 0\n",
      "f.yaml");
  ASSERT_FALSE(config.ok());
  const std::string& text = config.error().message;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_NE(text.find("f.yaml:2:19: http.store.shards"), std::string::npos) << text;
  EXPECT_NE(text.find("f.yaml:4:13: policy name 'bad name'"), std::string::npos) << text;
  EXPECT_NE(text.find("f.yaml:8:19: policy 'bad name'.rate_per_s"), std::string::npos) << text;
}

TEST(HttpConfig, AnUnknownAlgorithmHidesNoBadValueBesideIt) {
  auto config = parseHttpConfigText(
      "http:\n  policies:\n    - name: a\n      key: ip\n      algorithm: leaky\n"
      "      capacity: 0\n      rate_per_s: lots\n    - name: b\n      key: ip\n"
      "      algorithm: windowed\n      limit: 5\n      window_ms: -1\n",
      "f.yaml");
  ASSERT_FALSE(config.ok());
  const std::string& text = config.error().message;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;
  EXPECT_NE(text.find("f.yaml:5:18: unknown algorithm 'leaky'"), std::string::npos) << text;
  EXPECT_NE(text.find("f.yaml:6:17: policy 'a'.capacity must be from 1 to"), std::string::npos)
      << text;
  EXPECT_NE(text.find("f.yaml:7:19: policy 'a'.rate_per_s"), std::string::npos) << text;
  EXPECT_NE(text.find("f.yaml:10:18: unknown algorithm 'windowed'"), std::string::npos) << text;
  EXPECT_NE(text.find("f.yaml:12:18: policy 'b'.window_ms must be from 1 to"), std::string::npos)
      << text;
}

TEST(HttpConfig, YamlSyntaxErrorHasAPosition) {
  std::string error = firstError("http:\n  policies: [\n");
  EXPECT_EQ(error.rfind("f.yaml:", 0), 0u) << error;
  EXPECT_NE(error.find(':', 7), std::string::npos);
}

TEST(HttpConfig, EmptySectionMeansNoPolicies) {
  auto config = parseHttpConfigText("http:\n", "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(config->policies.empty());
}

TEST(HttpConfig, MissingSectionAndMissingFile) {
  EXPECT_EQ(firstError("xdp: {}\n"),
            "f.yaml: no top-level 'http:' section to read rate-limit policies from");
  auto missing = loadHttpConfig("/nonexistent/floodgate.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "/nonexistent/floodgate.yaml: cannot read the config file: No such file or directory");
}

TEST(HttpConfig, ParseSectionDirectlyCollectsDiagnostics) {
  YAML::Node root = YAML::Load("http:\n  policies: 3\n");
  config::Diagnostics diagnostics;
  parseHttpSection(root["http"], "x.yaml", diagnostics);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(config::formatDiagnostic(diagnostics.items()[0]),
            "x.yaml:2:13: http.policies must be a list of policies (got '3')");
}

// Every line of an invalid section, to compare against the expected ones.
std::vector<std::string> allErrors(const std::string& yaml) {
  auto config = parseHttpConfigText(yaml, "f.yaml");
  std::vector<std::string> lines;
  if (config.ok()) return lines;
  std::istringstream text(config.error().message);
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  return lines;
}

TEST(HttpConfig, ARepeatedKeyIsReportedNotSilentlyOverridden) {
  EXPECT_EQ(allErrors("http:\n  policies:\n    - name: a\n      key: ip\n"
                      "      algorithm: fixed_window\n      limit: 5\n      window_ms: 1000\n"
                      "      limit: 5000\n"),
            std::vector<std::string>{
                "f.yaml:8:7: key 'limit' is given twice in http.policies[0] (first at line 6)"});
  EXPECT_EQ(allErrors("http:\n  store: {type: redis, type: memory}\n"),
            (std::vector<std::string>{
                "f.yaml:2:24: key 'type' is given twice in http.store (first at line 2)",
                "f.yaml:2:10: http.store of type redis needs address: HOST:PORT or cluster: "
                "[HOST:PORT, ...]"}));
}

TEST(HttpConfig, NumbersBeyondTheirTypeOrWrittenOddlyAreRefused) {
  const std::string policy = "http:\n  policies:\n    - name: a\n      key: ip\n";
  EXPECT_EQ(
      firstError(policy + "      algorithm: fixed_window\n      limit: 99999999999999999999999\n"
                          "      window_ms: 1000\n"),
      "f.yaml:6:14: policy 'a'.limit must be a whole number from 1 to 1000000 (got "
      "'99999999999999999999999')");
  EXPECT_EQ(firstError(policy + "      algorithm: fixed_window\n      limit: 0x10\n"
                                "      window_ms: 1000\n"),
            "f.yaml:6:14: policy 'a'.limit must be a whole number from 1 to 1000000 (got '0x10')");
  for (const char* rate : {".nan", ".inf", "1e400"}) {
    EXPECT_EQ(
        firstError(policy + "      algorithm: gcra\n      capacity: 5\n      rate_per_s: " + rate +
                   "\n"),
        "f.yaml:7:19: policy 'a'.rate_per_s must be a number from 0.001 to 1000000000 (got '" +
            std::string(rate) + "')");
  }
  EXPECT_EQ(
      firstError("http:\n  escalate: {rejections: 5, within: 10s, ban: 99999999999d}\n"),
      "f.yaml:2:47: http.escalate.ban: '99999999999d' is not a duration (expected e.g. 500ms, "
      "30s, 10m or 1h)");
}

TEST(HttpConfig, WrongTypesAreNamedInTheMessage) {
  EXPECT_EQ(firstError("http: [a, b]\n"),
            "f.yaml:1:7: http must be a mapping of trusted_proxies, client_header, ipv6_prefix, "
            "store, policies, escalate, publish, shedding, retry_after_jitter, "
            "adaptive_concurrency (got a list)");
  EXPECT_EQ(firstError("http:\n  trusted_proxies: [[10.0.0.1]]\n  client_header: forwarded\n"),
            "f.yaml:2:21: a trusted proxy must be a non-empty string (got a list)");
  EXPECT_EQ(firstError("http:\n  policies:\n    - name: {a: 1}\n"),
            "f.yaml:3:13: http.policies[0].name must be a non-empty string (got a mapping)");
  EXPECT_EQ(firstError("http:\n  store:\n    max_keys:\n"),
            "f.yaml:3:5: http.store.max_keys must be a whole number from 1 to 1000000000 (got "
            "nothing)");
}

TEST(HttpConfig, AliasesAreReadAsWhatTheyNameAndMergeKeysAreUnknown) {
  auto config = parseHttpConfigText(
      "http:\n  policies:\n    - {name: a, key: ip, algorithm: gcra, capacity: &c 5, "
      "rate_per_s: 1}\n    - {name: b, key: ip, algorithm: gcra, capacity: *c, rate_per_s: 1}\n",
      "f.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->policies[1].algorithm.capacity, 5);
  // The same policy twice through an alias is the same name twice.
  EXPECT_EQ(firstError("http:\n  policies:\n    - &p {name: a, key: ip, algorithm: gcra, "
                       "capacity: 5, rate_per_s: 1}\n    - *p\n"),
            "f.yaml:3:17: policy name 'a' is used twice; names must be unique (they appear in "
            "RateLimit headers)");
  // yaml-cpp does not merge `<<`: it is a key like any other, and not one of ours.
  EXPECT_NE(firstError("http:\n  policies:\n    - &p {name: a, key: ip, algorithm: gcra, "
                       "capacity: 5, rate_per_s: 1}\n    - {<<: *p, name: b}\n")
                .find("f.yaml:4:8: unknown key '<<' in http.policies[1]"),
            std::string::npos);
  // An alias of a node inside itself: read once, never followed round.
  EXPECT_NE(firstError("http: &h {store: *h}\n").find("unknown key 'store' in http.store"),
            std::string::npos);
  EXPECT_EQ(firstError("http:\n  store: *nowhere\n").rfind("f.yaml:2:10: ", 0), 0u);
}

// A few kilobytes of aliases to lists of aliases stand for hundreds of millions of values
// (here 400 policies x 400 routes x 400 methods): the reader stops at its budget with one
// line instead of reading them all.
TEST(HttpConfig, AliasesThatStandForTooManyValuesAreOneErrorNotAnEndlessRead) {
  const int n = 400;
  std::string methods = "[GET";
  std::string routes = "[&r {match: {methods: &m ";
  for (int i = 1; i < n; ++i) methods += ",GET";
  routes += methods + "], path_prefix: /a}, cost: 1}";
  for (int i = 1; i < n; ++i) routes += ",*r";
  std::string yaml =
      "http:\n  policies:\n    - &p {name: a, key: ip, algorithm: fixed_window, "
      "limit: 1, window_ms: 1000, routes: " +
      routes + "]}\n";
  for (int i = 1; i < n; ++i) yaml += "    - *p\n";
  ASSERT_LT(yaml.size(), 8000u);
  const std::vector<std::string> errors = allErrors(yaml);
  int budget_errors = 0;
  for (const std::string& e : errors) {
    if (e.find("too much to read") != std::string::npos) ++budget_errors;
  }
  EXPECT_EQ(budget_errors, 1);
  // Whatever was reported before the budget ran out, nothing is reported after it.
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors.back().find("too much to read"), std::string::npos) << errors.back();
}

TEST(HttpConfig, DeepNestingIsAPositionedErrorNotACrash) {
  const std::string deep =
      "http:\n  policies: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  EXPECT_EQ(firstError(deep).rfind("f.yaml:2:", 0), 0u);
}

TEST(HttpConfig, AControlCharacterInAValueCannotForgeALine) {
  const std::vector<std::string> errors =
      allErrors("http:\n  store: {type: \"x\\nf.yaml:1:1: all good\\e[2J\"}\n");
  ASSERT_EQ(errors.size(), 1u);
  // refused as text no setting holds, and said without the character itself
  EXPECT_EQ(errors[0],
            "f.yaml:2:17: http.store.type holds a control character (byte 0x0a at offset 1): "
            "write it without NULs, newlines, tabs or escapes");
  // a value read otherwise is quoted escaped
  const std::vector<std::string> quoted =
      allErrors("http:\n  ipv6_prefix: \"x\\nf.yaml:1:1: ok\\e[2J\"\n");
  ASSERT_EQ(quoted.size(), 1u);
  EXPECT_NE(quoted[0].find("(got 'x\\nf.yaml:1:1: ok\\x1b[2J')"), std::string::npos) << quoted[0];
}

TEST(HttpConfig, OnlyTheFirstHttpSectionIsRead) {
  EXPECT_EQ(firstError("http:\n  policies: []\nhttp:\n  policies: []\n"),
            "f.yaml:3:1: key 'http' is given twice at the top level (first at line 1)");
}

// Requests are matched by their normal path: a prefix in any other form would match none.
TEST(HttpConfig, APathPrefixMustBeANormalPath) {
  const std::string policy =
      "http:\n  policies:\n    - name: a\n      key: ip\n"
      "      algorithm: gcra\n      capacity: 1\n      rate_per_s: 1\n      match: {path_prefix: ";
  EXPECT_EQ(firstError(policy + "/downloads}\n"), "(no error)");
  EXPECT_EQ(firstError(policy + "/downloads/}\n"), "(no error)");
  EXPECT_EQ(firstError(policy + "//downloads}\n"),
            "f.yaml:8:28: policy 'a'.match.path_prefix '//downloads' has an empty, '.' or '..' "
            "segment: requests are matched by their normal path; write '/downloads'");
  EXPECT_EQ(firstError(policy + "/a/./b/../downloads/.}\n"),
            "f.yaml:8:28: policy 'a'.match.path_prefix '/a/./b/../downloads/.' has an empty, "
            "'.' or '..' segment: requests are matched by their normal path; write "
            "'/a/downloads/'");
}

TEST(RouteMatch, MatchesWholeSegmentsAndMethods) {
  RouteMatch match{{"GET"}, "/api"};
  EXPECT_TRUE(match.matches("GET", "/api"));
  EXPECT_TRUE(match.matches("GET", "/api/users"));
  EXPECT_FALSE(match.matches("GET", "/apis"));
  EXPECT_FALSE(match.matches("POST", "/api"));
  RouteMatch slash{{}, "/static/"};
  EXPECT_TRUE(slash.matches("DELETE", "/static/x.css"));
  EXPECT_FALSE(slash.matches("GET", "/static"));
}

}  // namespace
}  // namespace floodgate::http
