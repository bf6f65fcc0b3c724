// SPDX-License-Identifier: MIT
// Limiter: applies every matching policy to a request, all-or-nothing, and names the binding one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "floodgate/common/result.h"
#include "floodgate/core/algorithm.h"
#include "floodgate/core/client_ip.h"
#include "floodgate/core/clock.h"
#include "floodgate/core/decision.h"
#include "floodgate/core/policy.h"
#include "floodgate/core/shedder.h"
#include "floodgate/stores/store.h"

namespace floodgate::http {

// What the limiter needs to know about a request. Views must outlive the check() call.
struct RequestInfo {
  std::string_view method;  // upper case, e.g. "GET"
  // percent-decoded, without the query string; policies match its normal form (normalPath)
  std::string_view path;
  std::string_view peer;  // socket peer address, e.g. "192.0.2.1" or "::1"
  // Every header line, in the order received; names compared case-insensitively.
  std::vector<std::pair<std::string_view, std::string_view>> headers;
  std::string_view user;  // user id for `key: user` policies; empty when not signed in
  // The priority class the service gives this request (http.shedding); empty: by header,
  // route or default.
  std::string_view priority;
};

// One policy that matched the request, and what it decided.
struct PolicyDecision {
  const PolicyConfig* policy = nullptr;
  const Algorithm* algorithm = nullptr;
  std::string key;
  int64_t cost = 0;
  Decision decision;
  // The store holds the request (so a refund has something to undo); cleared by the refund.
  bool reserved = false;
};

// The answer for one request.
struct Verdict {
  // allowed: every matching policy admitted (or none matched). binding: the decision that
  // governs the response: when rejected, the violated policy with the longest retry-after
  // (a policy whose cost exceeds its burst wins over all); when allowed, the policy with
  // the fewest units remaining, carrying the longest delay of all.
  Decision binding;
  // Every matching policy, in config order; but when a shared store already knows that one
  // rejects (it rejected the key moments ago, see SharedStore), only the policies known
  // to reject: the others are not asked, so the request takes nothing from any of them.
  std::vector<PolicyDecision> decisions;
  std::vector<std::string_view> violated;  // names of the policies that rejected
  // The client (http.client_header through trusted proxies): its address, and what it is
  // keyed and reported by (an IPv6 client's prefix). Both empty when it cannot be told:
  // `key: ip` policies then share kUnknownClientKey, and nothing is reported.
  std::string client_ip;
  std::string client_key;
  // Refused only because the server had no thread free to hold its shaping delay, or had
  // too many requests in flight for its priority class (binding outcome kOverloaded): other
  // clients' doing, not this one's excess, so never a reason to report it (escalate).
  bool shed = false;
  // Admitted by every policy, but refused because the server would not hold its shaping
  // delay (HttplibOptions::max_delay, max_delayed_threads): the policy queued it within
  // the capacity it was configured with, so the 429 is no excess of the client's and never
  // a reason to report it either.
  bool delay_refused = false;
  // With http.shedding: the request's priority class, and its place among the requests in
  // flight, held until this verdict (and every copy of it) is destroyed, so a caller keeps
  // the verdict until the response is sent. Null when shed, rejected, or without shedding.
  std::string_view priority;
  std::shared_ptr<InFlight> in_flight;
  int64_t decided_ns = 0;  // the clock reading the stores decided at (refunds give back at it)
  // Set by LiveLimiter: the policy set the pointers above point into, kept alive for as long
  // as the verdict is (a new set may be swapped in meanwhile).
  std::shared_ptr<const void> policy_set;

  bool allowed() const { return binding.allowed(); }
  // Whether a policy applied (there are RateLimit fields to send).
  bool limited() const { return !decisions.empty(); }
  // Whether this rejection is the client's own excess at its address, the only kind worth
  // reporting for a ban (http.escalate): a `key: ip` policy rejected it, and the client is
  // known. An API key or user bucket drained by someone else, a store that is down, or a
  // server with no thread free (shed) says nothing about the address that sent it; nor does
  // a queue wait longer than the server holds (delay_refused), which the policy admitted.
  // A policy over a prefix of clients (ipv4_prefix, ipv6_prefix) drained by the prefix as
  // a whole says nothing of this client's own excess either.
  bool reportable() const {
    if (allowed() || shed || delay_refused || client_key.empty()) return false;
    for (const PolicyDecision& pd : decisions) {
      if (pd.decision.outcome == Outcome::kRejected && pd.policy->key.kind == KeyKind::kIp &&
          pd.key == client_key) {
        return true;
      }
    }
    return false;
  }
};

// Builds the store of one policy; the default is storeFactoryFor(config.store) (memory, or
// a backend such as Redis, see store_backend.h).
using StoreFactory = std::function<std::unique_ptr<Store>(
    const PolicyConfig& policy, std::shared_ptr<const Algorithm> algorithm)>;

// The `key: ip` key of every request whose client cannot be told (see clientAddress()).
inline constexpr std::string_view kUnknownClientKey = "unknown-client";

// Thread-safe: check() may be called from any number of threads at once.
class Limiter {
 public:
  // A usage error if a policy's algorithm parameters are invalid.
  // With `previous` (a hot reload), each policy takes over the state of `previous`'s policy
  // of the same name: the very store when key, algorithm, parameters, prefetch, failure mode
  // and store settings are all unchanged (the two sets may then decide at the same time,
  // which stores allow); else, for memory stores with the same key, the state converted to
  // the new parameters (see state_migration.h); else a fresh store.
  static Result<std::unique_ptr<Limiter>> create(HttpConfig config,
                                                 std::shared_ptr<const Clock> clock,
                                                 StoreFactory store_factory = {},
                                                 const Limiter* previous = nullptr);

  // Reserves the request's cost in every matching policy; if any rejects, refunds the ones
  // that admitted, so a rejected request consumes nothing anywhere. The policies on one
  // shared store (Redis) are decided together, in one script run, all or nothing: when one
  // of them refuses, or a policy decided before them did, they charge nothing to refund.
  // A rejection a shared store already knows (see Verdict::decisions) is answered before
  // any policy is asked.
  Verdict check(const RequestInfo& request);

  // Gives back everything an admitted `verdict` of this limiter's check() reserved, for a
  // request the caller refuses after all (a shaping delay it will not wait out), so that the
  // request consumes nothing; each decision's remaining then reads as after the refund. A
  // verdict refunded already (every rejection is) gives back nothing more. Thread-safe as
  // check() is; const because only the stores change, and they may be shared with other sets.
  // With `kept` above 0, each policy keeps up to `kept` units of what it took and gives back
  // the rest (a request that turned out to cost less than its route, e.g. a malformed one),
  // and a later refund gives back what it kept. A bucket takes back only what it has not
  // refilled since the check (Algorithm::refund()): a refund long after it gives back
  // little or nothing, though each decision's remaining reads as if all came back.
  void refund(Verdict& verdict, int64_t kept = 0) const;

  // Takes again the place in flight (http.shedding, adaptive_concurrency) of an admitted
  // `verdict` of this limiter's check() whose caller gave it back to wait out the shaping
  // delay (abandon() and drop Verdict::in_flight): a request that only waits does no work,
  // so it holds no place others could use. true: admitted, its place in verdict.in_flight
  // (none without shedding). false: its class is full now, and the verdict is a shed
  // refusal (503, Verdict::shed) with everything it took refunded. Thread-safe as check().
  bool reenter(Verdict& verdict) const;

  const HttpConfig& config() const { return config_; }
  // Per-policy store, in config order (for stats).
  Store& store(size_t policy_index) { return *policies_[policy_index].store; }
  // The priority classes and their counts; null without http.shedding.
  const Shedder* shedder() const { return shedder_.get(); }

  // Spreads a refusal's retry-after over whole seconds (http.retry_after_jitter): check()
  // does it for its own; a caller refusing an admitted request does it for that one.
  void jitterRetryAfter(Decision& binding) const;

 private:
  struct CompiledPolicy {
    const PolicyConfig* config;
    std::shared_ptr<const Algorithm> algorithm;
    std::shared_ptr<Store> store;  // shared with the next policy set when it is unchanged
    // Set when the store is shared and can decide with others: such policies of one request
    // are decided in one round trip.
    SharedStore* batchable = nullptr;
    // Set when the store is shared (Redis, with or without prefetch): it may know that the
    // request is rejected without asking it.
    SharedStore* shared = nullptr;
  };

  Limiter(HttpConfig config, std::shared_ptr<const Clock> clock);
  // The policy named `name`, or null.
  const CompiledPolicy* find(const std::string& name) const;
  // The state `policy` takes over from this set (see create()): a store, or null for fresh.
  std::shared_ptr<Store> storeToKeep(const PolicyConfig& policy, const StoreConfig& store) const;
  void migrateInto(const PolicyConfig& policy, const Algorithm& algorithm, Store& into,
                   int64_t now_ns) const;
  // Takes the request's place in flight for its priority class (by its path as sent and its
  // `normal_path`) into `verdict`; false (and `verdict` an overloaded refusal) when its class
  // is shed.
  bool enterShedding(const RequestInfo& request, std::string_view normal_path,
                     Verdict& verdict) const;
  // refund() at `now_ns`: check() gives back a refused request's units at its own reading.
  void refundAt(Verdict& verdict, int64_t kept, int64_t now_ns) const;
  // Makes `verdict` the refusal of a request its priority class has no place for.
  void shed(Verdict& verdict) const;
  // Who sent `verdict`'s request, for the adaptive limit (AdaptiveLimit::record()).
  uint64_t clientId(const Verdict& verdict) const;
  // The key `policy` uses for `request`: empty if the request has none (header missing),
  // ambiguous if it names two (a key header sent twice with different values, or
  // credentials that decoders read differently: headerKey()).
  struct PolicyKey {
    std::string key;
    bool ambiguous = false;
  };
  PolicyKey keyFor(const PolicyConfig& policy, const RequestInfo& request,
                   const std::optional<IpAddress>& client, const std::string& client_key) const;

  HttpConfig config_;
  std::shared_ptr<const Clock> clock_;
  TrustedProxies trusted_;
  std::vector<CompiledPolicy> policies_;
  std::unique_ptr<Shedder> shedder_;
  // Handed from set to set whether or not this one sheds (see SheddingState).
  std::shared_ptr<SheddingState> shedding_state_;
};

// Every value of header `name` (case-insensitive), in order.
std::vector<std::string_view> headerValues(const RequestInfo& request, std::string_view name);

}  // namespace floodgate::http
