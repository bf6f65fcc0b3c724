// SPDX-License-Identifier: MIT
// RedisPolicyWatcher: follows policies the controller publishes to Redis for a fleet.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "floodgate/common/result.h"
#include "floodgate/core/live_limiter.h"
#include "floodgate/fleet/policy_document.h"
#include "floodgate/fleet/policy_watcher.h"
#include "floodgate/redis/client.h"

namespace floodgate::http {

struct RedisPolicySource {
  redis::ClientOptions client;  // the server (or cluster) the controller publishes to
  std::string key;              // http.publish.redis_key
  std::string channel;          // http.publish.redis_channel (the key when empty)
  std::string secret;           // the fleet's secret the controller signs with

  PolicySigning signing() const { return {key, secret}; }
};

// The document at source.key now; an error when Redis cannot be reached or nothing is
// published there yet.
Result<std::string> fetchPolicyDocument(const RedisPolicySource& source);

// On a thread of its own: SUBSCRIBEs to the channel (one connection to the first server),
// and GETs the key on every message, applying a new version to `live` when it is signed
// with source.secret for source.key and newer (applySignedPolicyDocument). After a lost
// connection it reconnects once a second and GETs again, so a publish made meanwhile is not
// missed. Stops when destroyed.
class RedisPolicyWatcher {
 public:
  static std::unique_ptr<RedisPolicyWatcher> start(RedisPolicySource source,
                                                   std::shared_ptr<LiveLimiter> live,
                                                   PolicyLog log = {});
  ~RedisPolicyWatcher();
  RedisPolicyWatcher(const RedisPolicyWatcher&) = delete;
  RedisPolicyWatcher& operator=(const RedisPolicyWatcher&) = delete;

 private:
  RedisPolicyWatcher(RedisPolicySource source, std::shared_ptr<LiveLimiter> live, PolicyLog log);
  void run();
  void fetchAndApply();

  RedisPolicySource source_;
  std::shared_ptr<LiveLimiter> live_;
  PolicyLog log_;
  redis::Client client_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace floodgate::http
