// SPDX-License-Identifier: MIT
// Counting responses and decisions, and writing them as Prometheus text.
#include "http/example/service_metrics.h"

#include "floodgate/redis/failover_store.h"
#include "floodgate/redis/prefetch_store.h"
#include "floodgate/stores/memory_store.h"

namespace floodgate::http::example {

namespace {

std::string_view outcomeLabel(Outcome outcome) {
  switch (outcome) {
    case Outcome::kAllowed:
      return "allowed";
    case Outcome::kRejected:
      return "rejected";
    case Outcome::kCostExceedsBurst:
      return "cost_exceeds_burst";
    case Outcome::kStoreUnavailable:
      return "store_unavailable";
    case Outcome::kOverloaded:
      return "overloaded";
    case Outcome::kAmbiguousKey:
      return "ambiguous_key";
  }
  return "unknown";
}

// A label value as the exposition format wants it: \, " and newlines escaped.
std::string labelValue(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

// One line per reason a published set can be refused.
std::string policyRefusals(const LiveLimiter& live) {
  std::string out;
  for (size_t i = 0; i < kPolicyRefusalKinds; ++i) {
    const auto reason = static_cast<PolicyRefusal>(i);
    out += std::string("floodgate_http_policy_refusals_total{reason=\"") +
           policyRefusalName(reason) + "\"} " + std::to_string(live.updatesRefused(reason)) + "\n";
  }
  return out;
}

}  // namespace

void ServiceMetrics::countResponse(const std::string& route, int code) {
  std::lock_guard lock(mutex_);
  ++responses_[{route, code}];
}

void ServiceMetrics::countVerdict(const Verdict& verdict) {
  std::lock_guard lock(mutex_);
  for (const PolicyDecision& pd : verdict.decisions) {
    ++decisions_[{pd.policy->name, std::string(outcomeLabel(pd.decision.outcome))}];
  }
}

std::string ServiceMetrics::render(Limiter& limiter, const LiveReporter* reporter,
                                   const LiveLimiter* live) const {
  std::string out;
  {
    std::lock_guard lock(mutex_);
    out += "# HELP floodgate_http_requests_total Responses sent, by route and status code.\n";
    out += "# TYPE floodgate_http_requests_total counter\n";
    for (const auto& [labels, count] : responses_) {
      out += "floodgate_http_requests_total{route=\"" + labels.first + "\",code=\"" +
             std::to_string(labels.second) + "\"} " + std::to_string(count) + "\n";
    }
    out += "# HELP floodgate_http_decisions_total Rate-limit decisions, by policy and outcome.\n";
    out += "# TYPE floodgate_http_decisions_total counter\n";
    for (const auto& [labels, count] : decisions_) {
      out += "floodgate_http_decisions_total{policy=\"" + labels.first + "\",outcome=\"" +
             labels.second + "\"} " + std::to_string(count) + "\n";
    }
  }
  out += "# HELP floodgate_http_store_keys Keys held in memory, by policy.\n";
  out += "# TYPE floodgate_http_store_keys gauge\n";
  std::string evictions =
      "# HELP floodgate_http_store_evictions_total Keys forgotten to stay within max_keys.\n"
      "# TYPE floodgate_http_store_evictions_total counter\n";
  const auto& policies = limiter.config().policies;
  for (size_t i = 0; i < policies.size(); ++i) {
    auto* store = dynamic_cast<MemoryStore*>(&limiter.store(i));
    if (store == nullptr) continue;
    MemoryStoreStats stats = store->stats();
    const std::string& name = policies[i].name;
    out +=
        "floodgate_http_store_keys{policy=\"" + name + "\"} " + std::to_string(stats.keys) + "\n";
    evictions += "floodgate_http_store_evictions_total{policy=\"" + name + "\",state=\"idle\"} " +
                 std::to_string(stats.evicted_idle) + "\n";
    evictions += "floodgate_http_store_evictions_total{policy=\"" + name + "\",state=\"active\"} " +
                 std::to_string(stats.evicted_active) + "\n";
  }
  out += evictions;
  const uint64_t sent = reporter ? reporter->reportsSent() : 0;
  const uint64_t errors = reporter ? reporter->reportErrors() : 0;
  const uint64_t dropped = reporter ? reporter->dropped() : 0;
  if (reporter && (reporter->active() || sent + errors + dropped > 0)) {
    out +=
        "# HELP floodgate_http_offender_reports_total Clients reported to floodgate run for a "
        "ban (http.escalate), by result.\n";
    out += "# TYPE floodgate_http_offender_reports_total counter\n";
    out += "floodgate_http_offender_reports_total{result=\"sent\"} " + std::to_string(sent) + "\n";
    out +=
        "floodgate_http_offender_reports_total{result=\"error\"} " + std::to_string(errors) + "\n";
    out += "floodgate_http_offender_reports_total{result=\"dropped\"} " + std::to_string(dropped) +
           "\n";
  }
  if (live) {
    out +=
        "# HELP floodgate_http_policy_reloads_total Published policy sets, by result (refused: "
        "the last good set stays).\n"
        "# TYPE floodgate_http_policy_reloads_total counter\n"
        "floodgate_http_policy_reloads_total{result=\"applied\"} " +
        std::to_string(live->updatesApplied()) +
        "\nfloodgate_http_policy_reloads_total{result=\"refused\"} " +
        std::to_string(live->updatesRefused()) +
        "\n# HELP floodgate_http_policy_refusals_total Published policy sets refused, by reason "
        "(unsigned, bad_signature, stale: a replay, invalid, unsafe_file).\n"
        "# TYPE floodgate_http_policy_refusals_total counter\n" +
        policyRefusals(*live) +
        "# HELP floodgate_http_policy_version The published policy version enforced (1).\n"
        "# TYPE floodgate_http_policy_version gauge\n"
        "floodgate_http_policy_version{version=\"" +
        labelValue(live->version()) + "\"} 1\n";
  }
  if (const Shedder* shedder = limiter.shedder()) out += renderShedding(*shedder);
  return out + renderSharedStore(limiter);
}

std::string ServiceMetrics::renderShedding(const Shedder& shedder) {
  std::string out =
      "# HELP floodgate_http_priority_requests_total Requests by priority class (http.shedding) "
      "and result: admitted to the policies, or shed with 503.\n"
      "# TYPE floodgate_http_priority_requests_total counter\n";
  std::string thresholds =
      "# HELP floodgate_http_priority_max_in_flight Requests in flight at which a priority "
      "class is shed.\n"
      "# TYPE floodgate_http_priority_max_in_flight gauge\n";
  for (const PriorityClassStats& c : shedder.stats()) {
    const std::string labels = "{class=\"" + labelValue(c.name) + "\"";
    out += "floodgate_http_priority_requests_total" + labels + ",result=\"admitted\"} " +
           std::to_string(c.admitted) + "\n";
    out += "floodgate_http_priority_requests_total" + labels + ",result=\"shed\"} " +
           std::to_string(c.shed) + "\n";
    thresholds += "floodgate_http_priority_max_in_flight" + labels + "} " +
                  std::to_string(c.max_in_flight) + "\n";
  }
  out += thresholds +
         "# HELP floodgate_http_in_flight Requests admitted and not yet answered.\n"
         "# TYPE floodgate_http_in_flight gauge\n"
         "floodgate_http_in_flight " +
         std::to_string(shedder.inFlight()) + "\n";
  if (const AdaptiveLimit* adaptive = shedder.adaptive()) {
    auto seconds = [](int64_t ns) { return std::to_string(static_cast<double>(ns) / 1e9); };
    out +=
        "# HELP floodgate_http_adaptive_limit Requests that may be in flight now "
        "(http.adaptive_concurrency).\n"
        "# TYPE floodgate_http_adaptive_limit gauge\n"
        "floodgate_http_adaptive_limit " +
        std::to_string(adaptive->limit()) +
        "\n# HELP floodgate_http_adaptive_latency_seconds The latency the limit follows: "
        "no_load (the best window, or the last probe at the floor) and recent (the last "
        "window).\n"
        "# TYPE floodgate_http_adaptive_latency_seconds gauge\n"
        "floodgate_http_adaptive_latency_seconds{estimate=\"no_load\"} " +
        seconds(adaptive->noLoadLatencyNs()) +
        "\nfloodgate_http_adaptive_latency_seconds{estimate=\"recent\"} " +
        seconds(adaptive->recentLatencyNs()) + "\n";
  }
  return out;
}

std::string ServiceMetrics::renderSharedStore(Limiter& limiter) const {
  std::string errors =
      "# HELP floodgate_http_store_errors_total Calls to the shared store that failed.\n"
      "# TYPE floodgate_http_store_errors_total counter\n";
  std::string fallback =
      "# HELP floodgate_http_store_fallback_decisions_total Decisions made by the failure mode "
      "while the shared store could not answer.\n"
      "# TYPE floodgate_http_store_fallback_decisions_total counter\n";
  std::string prefetch =
      "# HELP floodgate_http_prefetch_stranded_units Units leased here and not yet spent "
      "(unusable by the rest of the fleet).\n"
      "# TYPE floodgate_http_prefetch_stranded_units gauge\n";
  std::string leases =
      "# HELP floodgate_http_prefetch_leases_total Round trips that leased units for a hot key.\n"
      "# TYPE floodgate_http_prefetch_leases_total counter\n";
  const CircuitBreaker* breaker = nullptr;
  const FleetMembership* fleet = nullptr;
  bool any = false;
  const auto& policies = limiter.config().policies;
  for (size_t i = 0; i < policies.size(); ++i) {
    auto* store = dynamic_cast<FailoverStore*>(&limiter.store(i));
    if (store == nullptr) continue;
    any = true;
    breaker = &store->breaker();
    if (store->fleet() != nullptr) fleet = store->fleet();
    const std::string label = "{policy=\"" + policies[i].name + "\"";
    FailoverStats stats = store->stats();
    errors += "floodgate_http_store_errors_total" + label + "} " +
              std::to_string(stats.store_errors) + "\n";
    if (store->mode() == FailureMode::kOpen) {
      fallback += "floodgate_http_store_fallback_decisions_total" + label +
                  ",mode=\"open\",outcome=\"allowed\"} " + std::to_string(stats.fallback_allowed) +
                  "\n";
      fallback += "floodgate_http_store_fallback_decisions_total" + label +
                  ",mode=\"open\",outcome=\"rejected\"} " +
                  std::to_string(stats.fallback_rejected) + "\n";
    } else {
      fallback += "floodgate_http_store_fallback_decisions_total" + label +
                  ",mode=\"closed\",outcome=\"rejected\"} " + std::to_string(stats.failed_closed) +
                  "\n";
    }
    if (auto* p = dynamic_cast<PrefetchStore*>(&store->remote())) {
      PrefetchStats ps = p->stats();
      prefetch += "floodgate_http_prefetch_stranded_units" + label + "} " +
                  std::to_string(ps.stranded) + "\n";
      leases +=
          "floodgate_http_prefetch_leases_total" + label + "} " + std::to_string(ps.leases) + "\n";
    }
  }
  if (!any) return {};
  std::string out = errors + fallback + prefetch + leases;
  if (fleet != nullptr) {
    out +=
        "# HELP floodgate_http_store_live_instances Instances whose heartbeat is in Redis, at "
        "this instance's last answered beat (0 before any).\n"
        "# TYPE floodgate_http_store_live_instances gauge\n"
        "floodgate_http_store_live_instances " +
        std::to_string(fleet->liveCount()) +
        "\n"
        "# HELP floodgate_http_store_share_divisor What local shares divide each limit by: the "
        "live instances, at least http.store.instances.\n"
        "# TYPE floodgate_http_store_share_divisor gauge\n"
        "floodgate_http_store_share_divisor " +
        std::to_string(fleet->instances()) + "\n";
  }
  // One breaker guards the one shared store: 1 for its current state, 0 for the others.
  out +=
      "# HELP floodgate_http_store_breaker_state Circuit breaker in front of the shared store.\n"
      "# TYPE floodgate_http_store_breaker_state gauge\n";
  for (BreakerState state : {BreakerState::kClosed, BreakerState::kOpen, BreakerState::kHalfOpen}) {
    out += "floodgate_http_store_breaker_state{state=\"" + std::string(breakerStateName(state)) +
           "\"} " + (breaker->state() == state ? "1" : "0") + "\n";
  }
  out +=
      "# HELP floodgate_http_store_breaker_opened_total Times the breaker opened.\n"
      "# TYPE floodgate_http_store_breaker_opened_total counter\n"
      "floodgate_http_store_breaker_opened_total " +
      std::to_string(breaker->timesOpened()) + "\n";
  return out;
}

}  // namespace floodgate::http::example
