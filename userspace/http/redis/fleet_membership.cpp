// SPDX-License-Identifier: MIT
// Heartbeats into the fleet's sorted set, on a thread of their own, and the live count.
#include "floodgate/redis/fleet_membership.h"

#include <unistd.h>

#include <map>
#include <random>

#include "floodgate/redis/redis_store.h"
#include "floodgate/redis/scripts.h"

namespace floodgate::http {

const std::string& processInstanceId() {
  static const std::string id = [] {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
    std::random_device random;
    char tail[17];
    snprintf(tail, sizeof(tail), "%08x%08x", random(), random());
    return std::string(host) + ":" + std::to_string(getpid()) + ":" + tail;
  }();
  return id;
}

FleetMembership::FleetMembership(std::shared_ptr<redis::Client> client,
                                 FleetMembershipOptions options, std::shared_ptr<const Clock> clock)
    : client_(std::move(client)), options_(std::move(options)), clock_(std::move(clock)) {
  if (options_.instance_id.empty()) options_.instance_id = processInstanceId();
  // a failed beat keeps the last count; the next one tries again
  heartbeat_ = std::make_unique<PeriodicTask>(options_.heartbeat_ms, /*first_at_once=*/true,
                                              [this] { (void)beat(); });
}

FleetMembership::~FleetMembership() {
  heartbeat_->stop();
  // Leaving at once: the others' shares grow at their next beat, not expire_ms later.
  (void)client_->run({{key(), {"ZREM", key(), options_.instance_id}}});
}

std::string FleetMembership::key() const {
  return options_.prefix + ":{" + options_.prefix + ":fleet}:instances";
}

Status FleetMembership::beat() {
  const redis::Script& script = redis::heartbeatScript();
  std::string now_arg = options_.virtual_time ? std::to_string(clock_->nowNs() / 1000) : "";
  redis::RoutedCommand command{key(),
                               {"EVALSHA", script.sha1, "1", key(), std::move(now_arg),
                                options_.instance_id, std::to_string(options_.expire_ms * 1000)}};
  auto replies = RedisStore::evalAll(*client_, {std::move(command)}, {&script});
  if (!replies || (*replies)[0].type != redis::Reply::Type::kInteger) {
    failed_beats_.fetch_add(1, std::memory_order_relaxed);
    if (!replies) return replies.error();
    return Error::failure("redis heartbeat failed: " + (*replies)[0].str);
  }
  live_.store((*replies)[0].integer);
  return {};
}

std::shared_ptr<FleetMembership> FleetMembership::shared(const redis::ClientOptions& client_options,
                                                         const FleetMembershipOptions& options,
                                                         std::shared_ptr<const Clock> clock) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<FleetMembership>> memberships;
  std::string name = options.prefix + "|" + options.instance_id + "|" +
                     std::to_string(options.floor) + "|" + std::to_string(options.heartbeat_ms) +
                     "|" + std::to_string(options.expire_ms);
  for (const redis::Address& seed : client_options.seeds) name += "|" + seed.text();
  // another login is another client (kept in memory only)
  name += "|" + client_options.credentials.username + "|" + client_options.credentials.password;
  std::lock_guard lock(mutex);
  if (auto existing = memberships[name].lock()) return existing;
  for (auto it = memberships.begin(); it != memberships.end();) {
    it = it->second.expired() ? memberships.erase(it) : std::next(it);
  }
  auto made = std::make_shared<FleetMembership>(std::make_shared<redis::Client>(client_options),
                                                options, std::move(clock));
  memberships[name] = made;
  return made;
}

}  // namespace floodgate::http
