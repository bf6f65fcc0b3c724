// SPDX-License-Identifier: MIT
// The Redis watcher: SUBSCRIBE for the hint, GET for the document.
#include "floodgate/fleet/redis_policy_watcher.h"

#include <chrono>
#include <iostream>

#include "floodgate/redis/connection.h"
#include "floodgate/redis/store_factory.h"

namespace floodgate::http {

namespace {

// A wait for a message is cut into slices this long, so a stop is seen quickly.
constexpr auto kSlice = std::chrono::milliseconds(200);
constexpr auto kRetry = std::chrono::seconds(1);
// A GET of a document is not a rate-limit decision: give it time.
constexpr int64_t kFetchTimeoutMs = 2000;

}  // namespace

Result<std::string> fetchPolicyDocument(const RedisPolicySource& source) {
  redis::Client client(occasionalCallOptions(source.client, kFetchTimeoutMs));
  auto replies = client.run({{source.key, {"GET", source.key}}});
  if (!replies) return replies.error();
  const redis::Reply& reply = (*replies)[0];
  if (reply.type == redis::Reply::Type::kNil) {
    return Error::failure("redis key " + source.key +
                          " holds no policies yet (publish them with 'floodgate http publish "
                          "--config FILE' or 'floodgate run' with http.publish.redis_key)");
  }
  if (reply.type != redis::Reply::Type::kString) {
    return Error::failure("redis key " + source.key + ": not a policy document: " + reply.str);
  }
  return reply.str;
}

RedisPolicyWatcher::RedisPolicyWatcher(RedisPolicySource source, std::shared_ptr<LiveLimiter> live,
                                       PolicyLog log)
    : source_(std::move(source)),
      live_(std::move(live)),
      log_(std::move(log)),
      client_(occasionalCallOptions(source_.client, kFetchTimeoutMs)) {}

std::unique_ptr<RedisPolicyWatcher> RedisPolicyWatcher::start(RedisPolicySource source,
                                                              std::shared_ptr<LiveLimiter> live,
                                                              PolicyLog log) {
  if (!log) log = [](const std::string& line) { std::cerr << line << std::endl; };
  if (source.channel.empty()) source.channel = source.key;
  std::unique_ptr<RedisPolicyWatcher> watcher(
      new RedisPolicyWatcher(std::move(source), std::move(live), std::move(log)));
  watcher->thread_ = std::thread([w = watcher.get()] { w->run(); });
  return watcher;
}

RedisPolicyWatcher::~RedisPolicyWatcher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void RedisPolicyWatcher::fetchAndApply() {
  auto replies = client_.run({{source_.key, {"GET", source_.key}}});
  // A pooled connection from before a Redis restart fails once, and is dropped with it.
  if (!replies) replies = client_.run({{source_.key, {"GET", source_.key}}});
  if (!replies) {
    log_("floodgate: cannot read the published policies: " + replies.error().message);
    return;
  }
  const redis::Reply& reply = (*replies)[0];
  if (reply.type == redis::Reply::Type::kNil) return;  // nothing published (yet)
  applySignedPolicyDocument(*live_, reply.type == redis::Reply::Type::kString ? reply.str : "",
                            "redis:" + source_.key, source_.signing(), log_);
}

void RedisPolicyWatcher::run() {
  std::unique_ptr<redis::Connection> subscription;
  bool lost_logged = false;
  auto sleepUnlessStopped = [this](std::chrono::milliseconds total) {
    for (auto slept = std::chrono::milliseconds(0); slept < total && !stop_; slept += kSlice) {
      std::this_thread::sleep_for(kSlice);
    }
  };
  while (!stop_) {
    if (!subscription) {
      const redis::Address& server = source_.client.seeds.at(0);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      auto opened = redis::Connection::open(server, deadline, source_.client.credentials);
      Result<std::vector<redis::Reply>> subscribed =
          opened ? (*opened)->pipeline({{"SUBSCRIBE", source_.channel}}, deadline)
                 : Result<std::vector<redis::Reply>>(opened.error());
      if (!subscribed) {
        if (!lost_logged) {
          log_("floodgate: cannot follow the published policies (keeping version " +
               live_->version() + "; retrying every second): " + subscribed.error().message);
          lost_logged = true;
        }
        sleepUnlessStopped(kRetry);
        continue;
      }
      subscription = std::move(*opened);
      lost_logged = false;
      fetchAndApply();  // whatever was published while we were not listening
    }
    auto message = subscription->receive(std::chrono::steady_clock::now() + kSlice);
    if (!message) {
      subscription.reset();
      continue;
    }
    // ["message", channel, version]: only a hint that the key changed
    if (*message && (*message)->type == redis::Reply::Type::kArray &&
        !(*message)->elements.empty() && (*message)->elements[0].str == "message") {
      fetchAndApply();
    }
  }
}

}  // namespace floodgate::http
