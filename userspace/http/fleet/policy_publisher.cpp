// SPDX-License-Identifier: MIT
// publishPolicies: take a serial from Redis, render and sign once, then write the file and
// SET + PUBLISH in Redis.
#include "floodgate/fleet/policy_publisher.h"

#include <charconv>
#include <optional>

#include "floodgate/common/read_file.h"
#include "floodgate/core/config_parser.h"
#include "floodgate/fleet/atomic_file.h"
#include "floodgate/fleet/policy_document.h"
#include "floodgate/redis/store_factory.h"

namespace floodgate::http {

namespace {

// A publish happens on a reload, not per request: give Redis time (the store's timeout is
// tuned for decisions, tens of milliseconds).
constexpr int64_t kPublishTimeoutMs = 3000;

// The serial of a document published to Redis: Redis's own clock (TIME, in microseconds),
// raised past the last serial given out for this key (stored at KEY:serial), in one script.
// Why not the alternatives:
// - a plain INCR counter: Redis often runs without persistence, and after a restart the
//   counter would start again at 1 while every running service still holds a higher serial
//   and would refuse each new publish as a replay; the clock keeps growing across restarts.
// - each controller's wall clock: the controllers of a fleet all publish to the key (on
//   start and every reload); one whose clock is behind another's would see its publishes
//   refused. One clock, Redis's, orders them all, and the stored last serial keeps it from
//   going backwards if that clock is stepped back.
// Whoever can write Redis can raise or reset KEY:serial: that can only make later publishes
// look stale (a denial, as deleting the key is), never make a document they wrote valid.
// Two controllers publishing at once may SET in the other order than their serials: the
// services keep the newer set and refuse the older as stale; the next publish settles it.
// Microseconds since 1970 stay below 2^53, exact in a Lua number.
constexpr const char* kNextSerialScript = R"(
local now = redis.call('TIME')
local serial = tonumber(now[1]) * 1000000 + tonumber(now[2])
local last = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if serial <= last then serial = last + 1 end
local text = string.format('%.0f', serial)
redis.call('SET', KEYS[1], text)
return text
)";

Result<uint64_t> nextSerial(redis::Client& client, const std::string& redis_key) {
  const std::string counter = redis_key + ":serial";
  auto replies = client.run({{counter, {"EVAL", kNextSerialScript, "1", counter}}});
  if (!replies) return replies.error();
  const redis::Reply& reply = (*replies)[0];
  uint64_t serial = 0;
  auto [end, ec] = std::from_chars(reply.str.data(), reply.str.data() + reply.str.size(), serial);
  if (reply.isError() || ec != std::errc() || end != reply.str.data() + reply.str.size() ||
      serial == 0) {
    return Error::failure("cannot take the next serial from " + counter + ": " + reply.str +
                          " (delete that key if it holds something else)");
  }
  return serial;
}

Status publishToRedis(redis::Client& client, const PublishConfig& publish,
                      const PolicyDocument& document) {
  // SET before PUBLISH: a follower woken by the message GETs the new document.
  auto replies =
      client.run({{publish.redis_key, {"SET", publish.redis_key, document.text}},
                  {publish.redis_channel, {"PUBLISH", publish.redis_channel, document.version}}});
  if (!replies) return replies.error();
  for (const redis::Reply& reply : *replies) {
    if (reply.isError()) return Error::failure("redis refused the policies: " + reply.str);
  }
  return okStatus();
}

}  // namespace

std::string PublishReport::describe() const {
  std::string where;
  for (const std::string& target : targets) where += (where.empty() ? "" : ", ") + target;
  return "published http policies version " + version +
         (serial != 0 ? " (serial " + std::to_string(serial) + ")" : "") + " to " + where;
}

Result<PublishReport> publishPolicies(const YAML::Node& http, const HttpConfig& config) {
  const PublishConfig& publish = config.publish;
  std::string failures;
  auto fail = [&failures](const std::string& what) {
    failures += (failures.empty() ? "" : "; ") + what;
  };
  // To Redis: signed, with the next serial. The file gets the same document (or, when Redis
  // cannot be reached, an unsigned one: its permissions protect it, not a signature).
  std::optional<redis::Client> client;
  std::optional<uint64_t> serial;
  if (!publish.redis_key.empty()) {
    client.emplace(occasionalCallOptions(redisClientOptions(config.store), kPublishTimeoutMs));
    auto next = nextSerial(*client, publish.redis_key);
    if (next) {
      serial = *next;
    } else {
      fail("redis key " + publish.redis_key + ": " + next.error().message);
    }
  }
  PolicyDocument document =
      serial ? renderSignedPolicyDocument(http, *serial, {publish.redis_key, publish.secret})
             : renderPolicyDocument(http);
  if (!publish.file.empty()) {
    if (Status s = writeFileAtomically(publish.file, document.text); !s) fail(s.error().message);
  }
  if (serial) {
    if (Status s = publishToRedis(*client, publish, document); !s) {
      fail("redis key " + publish.redis_key + ": " + s.error().message);
    }
  }
  if (!failures.empty()) return Error::failure("publishing the http policies: " + failures);
  PublishReport report{document.version, document.serial, {}};
  if (!publish.file.empty()) report.targets.push_back(publish.file);
  if (!publish.redis_key.empty()) report.targets.push_back("redis key " + publish.redis_key);
  return report;
}

Result<PublishReport> publishHttpPolicyText(const std::string& text, const std::string& source) {
  // One text for both: what is published is exactly what was validated.
  auto config = parseHttpConfigText(text, source);
  if (!config) return config.error();
  if (!config->publish.enabled()) {
    return Error::failure(source +
                          ": http.publish is not set; add e.g. publish: {file: "
                          "/run/floodgate/http-policies.yaml} under http:");
  }
  // the document parseHttpConfigText checked (YAML::Load would take an empty first one)
  return publishPolicies(config::loadOneDocument(text)["http"], *config);
}

Result<PublishReport> publishHttpPolicies(const std::string& config_path) {
  Result<std::string> text = readConfigFile(config_path);
  if (!text) return text.error();
  return publishHttpPolicyText(*text, config_path);
}

}  // namespace floodgate::http
