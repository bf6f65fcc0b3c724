// SPDX-License-Identifier: MIT
// One call that puts a Limiter in front of every route of a cpp-httplib server.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "floodgate/core/limiter.h"
#include "floodgate/core/live_limiter.h"

namespace floodgate::http {

// The server threads held for a shaping delay: never more than `max` at once, nor more than
// `max_per_key` waiting in one queue (one key of one policy), nor more than `max_per_network`
// for the queues of one network's clients (queues keyed by client address), so that a few
// clients each keeping their own queue deep cannot take every slot, nor one holder of an
// IPv6 /48 with a queue per /64. A thread takes a slot before it waits and gives it back
// when done. Thread-safe.
class DelayedThreads {
 public:
  DelayedThreads(size_t max, size_t max_per_key) : DelayedThreads(max, max_per_key, max_per_key) {}
  DelayedThreads(size_t max, size_t max_per_key, size_t max_per_network)
      : max_(max), max_per_key_(max_per_key), max_per_network_(max_per_network) {}
  DelayedThreads(const DelayedThreads&) = delete;
  DelayedThreads& operator=(const DelayedThreads&) = delete;

  // One held thread's slot, given back when destroyed.
  class Slot {
   public:
    Slot(Slot&& other) noexcept
        : owner_(std::exchange(other.owner_, nullptr)),
          key_(std::move(other.key_)),
          network_(std::move(other.network_)) {}
    Slot& operator=(Slot&& other) noexcept {
      if (this != &other) {
        giveBack();
        owner_ = std::exchange(other.owner_, nullptr);
        key_ = std::move(other.key_);
        network_ = std::move(other.network_);
      }
      return *this;
    }
    ~Slot() { giveBack(); }

   private:
    friend class DelayedThreads;
    Slot(DelayedThreads* owner, std::string key, std::string network)
        : owner_(owner), key_(std::move(key)), network_(std::move(network)) {}
    void giveBack() {
      if (owner_ != nullptr) owner_->giveBack(key_, network_);
      owner_ = nullptr;
    }
    DelayedThreads* owner_;
    std::string key_;
    std::string network_;
  };

  // What tryTake() gives: a slot, or why there is none.
  struct Taken {
    std::optional<Slot> slot;
    // none because `max_per_key` threads wait in this queue already, or `max_per_network`
    // in its network's queues: the client's own doing (else `max` in all: others')
    bool queue_full = false;
  };
  // A slot for a wait in the queue `key`, of a client of `network` (empty: a queue no
  // client address keys, which no network bound applies to).
  Taken tryTake(std::string_view key, std::string_view network = {}) {
    std::string queue(key);
    std::string net(network);
    std::lock_guard lock(mutex_);
    if (held_.load(std::memory_order_relaxed) >= max_) return {};
    if (heldIn(by_queue_, queue) >= max_per_key_ ||
        (!net.empty() && heldIn(by_network_, net) >= max_per_network_)) {
      return {std::nullopt, true};
    }
    ++by_queue_[queue];
    if (!net.empty()) ++by_network_[net];
    held_.fetch_add(1, std::memory_order_relaxed);
    return {Slot(this, std::move(queue), std::move(net))};
  }
  // Threads holding a slot right now.
  size_t held() const { return held_.load(std::memory_order_relaxed); }
  size_t max() const { return max_; }
  size_t maxPerKey() const { return max_per_key_; }
  size_t maxPerNetwork() const { return max_per_network_; }

 private:
  static size_t heldIn(const std::unordered_map<std::string, size_t>& held,
                       const std::string& key) {
    auto it = held.find(key);
    return it == held.end() ? 0 : it->second;
  }
  void giveBack(const std::string& key, const std::string& network) {
    std::lock_guard lock(mutex_);
    auto in_queue = by_queue_.find(key);
    if (--in_queue->second == 0) by_queue_.erase(in_queue);
    if (!network.empty()) {
      auto in_network = by_network_.find(network);
      if (--in_network->second == 0) by_network_.erase(in_network);
    }
    held_.fetch_sub(1, std::memory_order_relaxed);
  }

  const size_t max_;
  const size_t max_per_key_;
  const size_t max_per_network_;
  std::mutex mutex_;  // guards by_queue_, by_network_ and the changes of held_
  // The slots held per queue and per network: only those holding one (at most `max`
  // entries each).
  std::unordered_map<std::string, size_t> by_queue_;
  std::unordered_map<std::string, size_t> by_network_;
  std::atomic<size_t> held_{0};
};

struct HttplibOptions {
  // The user id for `key: user` policies, e.g. from the session the service authenticated.
  // Unset or returning "" means no user (such policies do not apply).
  std::function<std::string(const httplib::Request&)> user_of;
  // The priority class of a request (http.shedding), e.g. from what the route or the user
  // is worth to the service. Unset, returning "" or a name that is no class: the class is
  // the priority header's (from a trusted proxy), else the route's, else the default.
  std::function<std::string(const httplib::Request&)> priority_of;
  // Hold an admitted request in its server thread for the decision's delay (leaky-bucket
  // shaping) before the route runs, within the two bounds below. Off: the delay is only
  // reported, and nothing is refused for it.
  bool apply_delay = true;
  // At most this many server threads are held for a delay at once, so that queued clients
  // cannot park the whole pool: a request that would need one more is refused with 429 (its
  // cost refunded), Retry-After its delay (by then it needs no wait). The default is half of
  // cpp-httplib's default pool (CPPHTTPLIB_THREAD_POOL_COUNT), leaving the other half to
  // requests nobody queues however many are queued; give half of your pool if you set
  // the server's new_task_queue to another size.
  size_t max_delayed_threads = std::max<size_t>(1, CPPHTTPLIB_THREAD_POOL_COUNT / 2);
  // At most this many of them wait in one queue (one key of the policy whose delay it is),
  // so that a few clients each keeping their own queue deep (up to rate × max_delay waits
  // each) cannot take them all and have every other client's wait refused: a request that
  // would need one more is refused with 429 (its cost refunded), Retry-After its delay (by
  // then its own queue ahead has drained). Unset: an eighth of max_delayed_threads, at
  // least 1, so that at least eight queues share the slots (5 each of a pool of 80's 40).
  std::optional<size_t> max_delayed_threads_per_key;
  // At most this many of them wait in the queues of one network's clients, where the queue is
  // a client address's (a `key: ip` policy's): an IPv4 /24, an IPv6 /48 (a NAT64 address's
  // IPv4 /24), whose holder would otherwise have a queue per /64 (65,536 of them) to take
  // every slot with. A request that would need one more is refused as past its queue's
  // share. Unset: max_delayed_threads_per_key's value, so that a network waits in as many
  // as one key.
  std::optional<size_t> max_delayed_threads_per_network;
  // No request is held longer: one whose delay exceeds this is refused with 429 (its cost
  // refunded), Retry-After when its delay will have come down to max_delay. The default,
  // one second, is the finest a Retry-After can say: a longer wait is told to the client as
  // well as it is done by holding a thread.
  std::chrono::nanoseconds max_delay = std::chrono::seconds(1);
  // How a delay is waited out; unset: std::this_thread::sleep_for. Tests pass a wait they
  // end themselves.
  std::function<void(std::chrono::nanoseconds)> wait_for;
  // Called for every request a policy applied to or that was shed, after the decision and
  // any shaping wait (e.g. for metrics). The verdict holds no place in flight: a copy kept
  // longer costs nothing.
  std::function<void(const httplib::Request&, const Verdict&)> on_verdict;
  // What an admitted request answered 400 Bad Request before any route ran (by cpp-httplib:
  // a body it could not read, a method no route takes), or by a route that
  // malformed_route_400 names, costs in each policy, at most its cost there: the rest is
  // given back, and the response's RateLimit header says so. The route's work did not
  // happen, so a dear route's price is not due; but a malformed request still counts as a
  // request, or malformed ones would be free of every limit. A negative value: no refund.
  int64_t bad_request_cost = 1;
  // Whether the 400 a route's handler answered to `req` refused it as malformed before the
  // route did its work (a body it could not parse), so that bad_request_cost applies to it.
  // Unset, or false: the route's 400 pays the route's cost. A route that does its work and
  // then answers 400 must not be named: the client chooses that answer (an OAuth2 token
  // endpoint's invalid_grant for a wrong password, RFC 6749 5.2), and every guess would
  // cost bad_request_cost instead of the route's price.
  std::function<bool(const httplib::Request&)> malformed_route_400;
  // true: turn Nagle's algorithm off on the server's connections (TCP_NODELAY); false: leave
  // the server's setting as it is. cpp-httplib sends a response in two writes, head then
  // body; with Nagle on, the body waits until the client acknowledges the head, which the
  // client's TCP delays up to 40 ms (Linux): on a keep-alive connection every response after
  // the first few, a 429 included, took ~40 ms instead of microseconds. cpp-httplib 0.11
  // leaves Nagle on and applies this to the listening socket, whose connections inherit it:
  // install the limiter before the server binds.
  bool tcp_nodelay = true;
};

// Installs `limiter` as `server`'s pre-routing handler, and as its post-routing handler for
// bad_request_cost, malformed_route_400 and the adaptive limit (replacing any set before; it
// ends a request's latency sample when the route has answered, before the response is
// written: one set after it leaves the sample running until the response is destroyed, 4xx
// included), and turns TCP_NODELAY on (tcp_nodelay above): call it before the server binds.
// Every response under a policy gets RateLimit-Policy and RateLimit; a rejection is answered
// right there with 429 (503 for a fail-closed store that is down, or a priority class shed
// under http.shedding; 400 without the RateLimit fields for a key header sent twice with
// different values), Retry-After when a retry can
// succeed, and an application/problem+json body naming the violated policies (or saying
// "overloaded"). An admitted request holds its place in flight (http.shedding) until its
// response has been written (the response's resource releaser; a streaming route that
// sets its own gives the place back when the route returns), but none while it waits out
// a shaping delay: it takes its place again after (Limiter::reenter()), or is shed then.
// Thread-safe as the limiter is; `limiter` is kept alive by the server's handler. Returns
// the threads held for a delay (for metrics and tests).
std::shared_ptr<const DelayedThreads> installRateLimiter(httplib::Server& server,
                                                         std::shared_ptr<Limiter> limiter,
                                                         HttplibOptions options = {});
// Same with a limiter whose policies are swapped while the server runs (a published source).
std::shared_ptr<const DelayedThreads> installRateLimiter(httplib::Server& server,
                                                         std::shared_ptr<LiveLimiter> limiter,
                                                         HttplibOptions options = {});

}  // namespace floodgate::http
