// SPDX-License-Identifier: MIT
// Policy composition: match, key, reserve everywhere, refund on any rejection.
#include "floodgate/core/limiter.h"

#include <algorithm>
#include <functional>

#include "floodgate/core/header_text.h"
#include "floodgate/core/request_path.h"
#include "floodgate/core/retry_jitter.h"
#include "floodgate/stores/memory_store.h"
#include "floodgate/stores/state_migration.h"
#include "floodgate/stores/store_backend.h"

namespace floodgate::http {

namespace {

// Rank of a rejection for choosing the binding policy: can-never-succeed first. An
// ambiguous key is last: a request over another policy's limit is answered as such (429,
// and reportable when it is the client's own excess).
int severity(Outcome outcome) {
  switch (outcome) {
    case Outcome::kCostExceedsBurst:
      return 4;
    case Outcome::kOverloaded:
      return 3;
    case Outcome::kStoreUnavailable:
      return 3;
    case Outcome::kRejected:
      return 2;
    case Outcome::kAmbiguousKey:
      return 1;
    case Outcome::kAllowed:
      return 0;
  }
  return 0;
}

// Records a store's answer in `pd`; when the store could not answer, the failure mode
// decides (and there is no state to refund later).
void settle(PolicyDecision& pd, Result<Decision> decided) {
  std::string_view name = pd.decision.policy;
  if (decided) {
    pd.decision = *decided;
    pd.reserved = pd.decision.allowed();
  } else {
    const FailureMode mode = pd.policy->failure_mode;
    pd.decision = Decision{};
    pd.decision.limit = pd.algorithm->quota();
    pd.decision.remaining = mode == FailureMode::kOpen ? pd.decision.limit : 0;
    pd.decision.outcome =
        mode == FailureMode::kOpen ? Outcome::kAllowed : Outcome::kStoreUnavailable;
  }
  pd.decision.policy = name;
}

// Reads `pd` as after `back` of its units were given back (the store's part is the caller's).
void giveBackInDecision(PolicyDecision& pd, int64_t back) {
  pd.cost -= back;
  pd.reserved = pd.cost > 0;
  pd.decision.remaining = std::min(pd.decision.limit, pd.decision.remaining + back);
  pd.decision.delay_ns = 0;
}

}  // namespace

std::vector<std::string_view> headerValues(const RequestInfo& request, std::string_view name) {
  std::vector<std::string_view> values;
  for (const auto& [n, v] : request.headers) {
    if (equalsIgnoreCase(n, name)) values.push_back(v);
  }
  return values;
}

Limiter::Limiter(HttpConfig config, std::shared_ptr<const Clock> clock)
    : config_(std::move(config)), clock_(std::move(clock)), trusted_(config_.trusted_proxies) {}

Result<std::unique_ptr<Limiter>> Limiter::create(HttpConfig config,
                                                 std::shared_ptr<const Clock> clock,
                                                 StoreFactory store_factory,
                                                 const Limiter* previous) {
  std::unique_ptr<Limiter> limiter(new Limiter(std::move(config), std::move(clock)));
  if (!store_factory) {
    auto made = storeFactoryFor(limiter->config_.store, limiter->clock_);
    if (!made) return made.error();
    store_factory = std::move(*made);
  }
  const int64_t now_ns = limiter->clock_->nowNs();
  for (const PolicyConfig& policy : limiter->config_.policies) {
    auto algorithm = makeAlgorithm(policy.algorithm);
    if (!algorithm) {
      return Error::usage("policy '" + policy.name + "': " + algorithm.error().message);
    }
    std::shared_ptr<Store> store;
    if (previous != nullptr) store = previous->storeToKeep(policy, limiter->config_.store);
    if (!store) {
      store = store_factory(policy, *algorithm);
      if (previous != nullptr) previous->migrateInto(policy, **algorithm, *store, now_ns);
    }
    auto* shared = dynamic_cast<SharedStore*>(store.get());
    SharedStore* batchable =
        shared != nullptr && shared->batchGroup() != nullptr ? shared : nullptr;
    limiter->policies_.push_back(
        {&policy, std::move(*algorithm), std::move(store), batchable, shared});
  }
  limiter->shedding_state_ =
      previous != nullptr ? previous->shedding_state_ : std::make_shared<SheddingState>();
  if (limiter->config_.shedding.enabled() || limiter->config_.adaptive_concurrency.enabled) {
    limiter->shedder_ =
        std::make_unique<Shedder>(limiter->config_.shedding, limiter->config_.adaptive_concurrency,
                                  limiter->shedding_state_, limiter->clock_);
  }
  return limiter;
}

const Limiter::CompiledPolicy* Limiter::find(const std::string& name) const {
  for (const CompiledPolicy& policy : policies_) {
    if (policy.config->name == name) return &policy;
  }
  return nullptr;
}

std::shared_ptr<Store> Limiter::storeToKeep(const PolicyConfig& policy,
                                            const StoreConfig& store) const {
  const CompiledPolicy* old = find(policy.name);
  if (old == nullptr || !(store == config_.store)) return nullptr;
  const PolicyConfig& was = *old->config;
  // match, cost and routes decide which requests reach the state, not what it means
  bool same_meaning = was.key == policy.key && was.algorithm == policy.algorithm &&
                      was.failure_mode == policy.failure_mode && was.prefetch == policy.prefetch &&
                      was.sync == policy.sync;
  return same_meaning ? old->store : nullptr;
}

void Limiter::migrateInto(const PolicyConfig& policy, const Algorithm& algorithm, Store& into,
                          int64_t now_ns) const {
  const CompiledPolicy* old = find(policy.name);
  if (old == nullptr || !(old->config->key == policy.key)) return;  // other keys: fresh
  auto* from = dynamic_cast<const MemoryStore*>(old->store.get());
  auto* to = dynamic_cast<MemoryStore*>(&into);
  // A shared store (Redis) keeps its state where it is, under the policy's name; its
  // scripts carry each key across on the key's next decision (redis/scripts.cpp).
  if (from == nullptr || to == nullptr) return;
  migrateStore(*from, *old->algorithm, *to, algorithm, now_ns);
}

Limiter::PolicyKey Limiter::keyFor(const PolicyConfig& policy, const RequestInfo& request,
                                   const std::optional<IpAddress>& client,
                                   const std::string& client_key) const {
  switch (policy.key.kind) {
    case KeyKind::kIp: {
      if (!client) return {std::string(kUnknownClientKey)};
      const int prefix =
          keyPrefixLength(*client, policy.key.ipv4_prefix,
                          policy.key.ipv6_prefix ? policy.key.ipv6_prefix : config_.ipv6_prefix);
      // the client's own key unless the policy groups clients by a prefix of their own
      if (prefix == keyPrefixLength(*client, 32, config_.ipv6_prefix)) return {client_key};
      return {IpPrefix::of(*client, prefix).toString()};
    }
    case KeyKind::kUser:
      return {std::string(request.user)};
    case KeyKind::kHeader: {
      const std::vector<std::string_view> lines = headerValues(request, policy.key.header);
      if (lines.empty()) return {};
      std::optional<std::string> key = headerKey(policy.key.header, lines.front());
      // Two different lines of the key header: which one the service authenticates is its
      // framework's choice (the first, for cpp-httplib), so charging any one of them, or a
      // key made of them, or a key all such requests share, lets the holder of one key add
      // a junk line and be charged elsewhere. Credentials not spelled canonically are read
      // as one key by one decoder and as another by the next: charging their text would
      // give each spelling of one secret a quota. Both are refused (kAmbiguousKey).
      if (!key) return {{}, true};
      for (size_t i = 1; i < lines.size(); ++i) {
        if (headerKey(policy.key.header, lines[i]) != key) return {{}, true};
      }
      return {std::move(*key)};
    }
  }
  return {};
}

Verdict Limiter::check(const RequestInfo& request) {
  Verdict verdict;
  const std::string_view header = clientHeaderName(config_.client_header);
  const std::optional<IpAddress> client =
      clientAddress(request.peer, config_.client_header,
                    config_.client_header == ClientHeader::kNone ? std::vector<std::string_view>{}
                                                                 : headerValues(request, header),
                    trusted_);
  if (client) {
    verdict.client_ip = client->toString();
    // an IPv4 client is keyed by its address: the text just made
    verdict.client_key = client->v4 ? verdict.client_ip : clientKey(*client, config_.ipv6_prefix);
  }
  const int64_t now_ns = clock_->nowNs();
  verdict.decided_ns = now_ns;
  // A server may resolve a path in either spelling: cpp-httplib serves "//downloads/x",
  // "/./downloads/x" and "/x/../downloads/x" from a mount as "/downloads/x", and routes
  // "/search/.." to a "/search/(.*)" handler as sent. So a policy applies if either spelling
  // meets it, and a request pays the higher cost and gets the lower class of the two: one
  // matched alone would let the other walk around a policy, a cost or a class.
  std::string normal_path_buffer;
  const std::string_view sent = request.path;
  const std::string_view normal = normalPath(request.path, normal_path_buffer);
  if (shedder_ != nullptr && !enterShedding(request, normal, verdict)) return verdict;

  // Policies on Redis are decided after the loop, together: one round trip per request.
  std::vector<std::pair<size_t, Store*>> local;
  std::vector<size_t> together;
  std::vector<SharedStore*> together_stores;
  SharedStore* first_together = nullptr;
  // Rejections a shared store knows without a round trip (a key it rejected moments ago,
  // within its retry-after). One is enough to reject the request, so then no policy is
  // asked at all: nothing is taken anywhere, nothing needs a refund, and a client hammering
  // a rejected key costs Redis nothing until its retry-after.
  std::vector<PolicyDecision> known_rejections;
  bool ambiguous = false;  // a policy's key header was sent twice with different values
  // one allocation each rather than one per doubling (none when there is no policy)
  verdict.decisions.reserve(policies_.size());
  local.reserve(policies_.size());
  for (CompiledPolicy& policy : policies_) {
    const PolicyConfig& config = *policy.config;
    const bool as_sent = config.match.matches(request.method, sent);
    const bool as_normal = config.match.matches(request.method, normal);
    if (!as_sent && !as_normal) continue;
    PolicyKey key = keyFor(config, request, client, verdict.client_key);
    // e.g. no API key header: this policy does not apply
    if (key.key.empty() && !key.ambiguous) continue;

    PolicyDecision pd;
    pd.policy = &config;
    pd.algorithm = policy.algorithm.get();
    // the spellings the policy applies by: one that meets no policy routes elsewhere
    pd.cost = std::max(as_sent ? config.costFor(request.method, sent) : 0,
                       as_normal ? config.costFor(request.method, normal) : 0);
    pd.decision.policy = config.name;
    pd.key = std::move(key.key);
    if (key.ambiguous) {
      ambiguous = true;
      // refused, charged nothing; the other policies are decided still, so that a client
      // sending such requests without end meets its per-IP limit (see below)
      Decision refused;
      refused.outcome = Outcome::kAmbiguousKey;
      refused.limit = policy.algorithm->quota();
      settle(pd, refused);
      verdict.decisions.push_back(std::move(pd));
      continue;
    }
    if (policy.shared != nullptr) {
      if (auto known = policy.shared->knownRejection(pd.key, now_ns, pd.cost)) {
        settle(pd, *known);
        known_rejections.push_back(std::move(pd));
        continue;
      }
    }
    if (policy.batchable != nullptr &&
        (first_together == nullptr ||
         policy.batchable->batchGroup() == first_together->batchGroup())) {
      if (first_together == nullptr) first_together = policy.batchable;
      together.push_back(verdict.decisions.size());
      together_stores.push_back(policy.batchable);
    } else {
      // decided after the loop: the keys of every policy are on their way from memory
      // together, rather than one cache miss after another
      policy.store->prefetch(pd.key);
      local.push_back({verdict.decisions.size(), policy.store.get()});
    }
    verdict.decisions.push_back(std::move(pd));
  }
  if (!known_rejections.empty()) {
    verdict.decisions = std::move(known_rejections);
    local.clear();
    together.clear();
  } else if (ambiguous) {
    // Refused for its key whatever the rest decide: every other policy is charged one unit,
    // not the route's cost, and keeps it (below), so that a client sending such requests
    // without end meets its per-IP limit, at one decision per policy.
    for (PolicyDecision& pd : verdict.decisions) pd.cost = std::min<int64_t>(pd.cost, 1);
  }
  bool refused = false;  // by a policy decided so far
  for (const auto& [index, store] : local) {
    PolicyDecision& pd = verdict.decisions[index];
    settle(pd, store->decide(pd.key, now_ns, pd.cost));
    refused = refused || !pd.decision.allowed();
  }
  if (refused && !together.empty()) {
    // Refused already, for nothing (a local decision, a sync share). Of the shared policies
    // only the `key: ip` ones are looked at, uncharged: a client their limit refuses is the
    // one handed to the packet layer (Verdict::reportable), and the store remembers such a
    // rejection, so a client refused without end costs it a call per retry-after, not per
    // request. The others are not asked at all, nor listed in the verdict.
    std::vector<SharedStore::Item> items;
    std::vector<size_t> looked;  // indices into verdict.decisions, in config order
    for (size_t j = 0; j < together.size(); ++j) {
      const PolicyDecision& pd = verdict.decisions[together[j]];
      if (pd.policy->key.kind != KeyKind::kIp) continue;
      items.push_back({together_stores[j], pd.key, pd.cost});
      looked.push_back(together[j]);
    }
    if (!items.empty()) {
      std::vector<SharedStore::Answer> answers =
          first_together->decideTogether(items, now_ns, false);
      for (size_t k = 0; k < looked.size(); ++k) {
        PolicyDecision& pd = verdict.decisions[looked[k]];
        settle(pd, std::move(answers[k].decision));
        if (pd.reserved && !answers[k].charged) giveBackInDecision(pd, pd.cost);
      }
    }
    std::vector<PolicyDecision> decided;
    for (size_t i = 0; i < verdict.decisions.size(); ++i) {
      const bool shared = std::find(together.begin(), together.end(), i) != together.end();
      if (!shared || std::find(looked.begin(), looked.end(), i) != looked.end()) {
        decided.push_back(std::move(verdict.decisions[i]));
      }
    }
    verdict.decisions = std::move(decided);
  } else if (together.size() == 1) {
    PolicyDecision& pd = verdict.decisions[together[0]];
    settle(pd, first_together->decide(pd.key, now_ns, pd.cost));
  } else if (!together.empty()) {
    // All or nothing in the store: a refusal there charges none of them.
    std::vector<SharedStore::Item> items;
    items.reserve(together.size());
    for (size_t j = 0; j < together.size(); ++j) {
      const PolicyDecision& pd = verdict.decisions[together[j]];
      items.push_back({together_stores[j], pd.key, pd.cost});
    }
    std::vector<SharedStore::Answer> decided = first_together->decideTogether(items, now_ns, true);
    for (size_t j = 0; j < together.size(); ++j) {
      PolicyDecision& pd = verdict.decisions[together[j]];
      settle(pd, std::move(decided[j].decision));
      if (pd.reserved && !decided[j].charged) giveBackInDecision(pd, pd.cost);
    }
  }

  const PolicyDecision* binding = nullptr;
  int64_t longest_delay_ns = 0;
  for (const PolicyDecision& pd : verdict.decisions) {
    const Decision& d = pd.decision;
    if (!d.allowed()) verdict.violated.push_back(d.policy);
    longest_delay_ns = std::max(longest_delay_ns, d.delay_ns);
    if (binding == nullptr) {
      binding = &pd;
      continue;
    }
    const Decision& b = binding->decision;
    bool worse =
        severity(d.outcome) != severity(b.outcome)
            ? severity(d.outcome) > severity(b.outcome)
            : (d.allowed() ? d.remaining < b.remaining : d.retry_after_ns > b.retry_after_ns);
    if (worse) binding = &pd;
  }
  if (binding == nullptr) return verdict;  // no policy applies: allowed, unlimited
  verdict.binding = binding->decision;

  if (verdict.violated.empty()) {
    verdict.binding.delay_ns = longest_delay_ns;
    return verdict;
  }
  // All-or-nothing: give back what the admitting policies took. A refused request does no
  // work, so it holds no place in flight either. A request refused for an ambiguous key
  // alone keeps the unit each policy took: else sending the key header twice would be a
  // way to ask without end that no per-IP limit counts.
  if (verdict.binding.outcome != Outcome::kAmbiguousKey) refundAt(verdict, 0, now_ns);
  if (verdict.in_flight) verdict.in_flight->abandon();
  verdict.in_flight.reset();
  if (verdict.binding.outcome == Outcome::kRejected) jitterRetryAfter(verdict.binding);
  return verdict;
}

void Limiter::jitterRetryAfter(Decision& binding) const {
  if (!(config_.retry_after_jitter > 0)) return;  // off: the exact wait, as decided
  binding.retry_after_ns =
      jitteredRetryAfterNs(binding.retry_after_ns, config_.retry_after_jitter, jitterRandom());
}

uint64_t Limiter::clientId(const Verdict& verdict) const {
  // the adaptive limit takes only so many samples of one client (those not told apart: one)
  return shedder_->adaptive() != nullptr ? std::hash<std::string>{}(verdict.client_key) : 0;
}

bool Limiter::enterShedding(const RequestInfo& request, std::string_view normal_path,
                            Verdict& verdict) const {
  const SheddingConfig& shedding = config_.shedding;
  // The priority header is a proxy's word: from anyone else it is ignored.
  std::vector<std::string_view> header_values;
  if (!shedding.priority_header.empty()) {
    if (trustedPeer(request.peer, trusted_)) {
      header_values = headerValues(request, shedding.priority_header);
    }
  }
  const size_t index = shedder_->classify(request.priority, header_values, request.method,
                                          request.path, normal_path);
  verdict.priority = shedder_->name(index);
  verdict.in_flight = shedder_->enter(index, clientId(verdict));
  if (verdict.in_flight) return true;
  shed(verdict);
  return false;
}

void Limiter::shed(Verdict& verdict) const {
  verdict.shed = true;
  verdict.binding.outcome = Outcome::kOverloaded;
  // over a class's share of a fixed or adaptive limit: the retry-after of whichever set it
  verdict.binding.retry_after_ns = static_cast<int64_t>(
      config_.shedding.enabled() ? config_.shedding.retry_after_ns
                                 : config_.adaptive_concurrency.retry_after_ns);
  jitterRetryAfter(verdict.binding);
}

bool Limiter::reenter(Verdict& verdict) const {
  if (shedder_ == nullptr || !verdict.allowed()) return verdict.allowed();
  verdict.in_flight =
      shedder_->enter(shedder_->indexOf(verdict.priority), clientId(verdict), /*again=*/true);
  if (verdict.in_flight) return true;
  // it waited, and did no work: it keeps nothing of any policy's
  refund(verdict);
  shed(verdict);
  return false;
}

void Limiter::refund(Verdict& verdict, int64_t kept) const {
  refundAt(verdict, kept, clock_->nowNs());
}

void Limiter::refundAt(Verdict& verdict, int64_t kept, int64_t now_ns) const {
  kept = std::max<int64_t>(kept, 0);
  // decisions are in config order, as policies_ is
  for (size_t i = 0, p = 0; i < verdict.decisions.size(); ++i) {
    PolicyDecision& pd = verdict.decisions[i];
    while (policies_[p].config != pd.policy) ++p;
    if (!pd.reserved || pd.cost <= kept) continue;
    const int64_t back = pd.cost - kept;
    // a queued request (leaky_bucket) takes its turn `delay_ns` after the check: its own
    // units drain from then, not while it waits
    policies_[p].store->refundDecision(pd.key, pd.decision,
                                       verdict.decided_ns + pd.decision.delay_ns, now_ns, back);
    giveBackInDecision(pd, back);
    if (verdict.binding.policy == pd.decision.policy) {
      verdict.binding.remaining = pd.decision.remaining;
    }
  }
  verdict.binding.delay_ns = 0;
}

}  // namespace floodgate::http
