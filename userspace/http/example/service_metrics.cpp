// SPDX-License-Identifier: MIT
// Counting responses and decisions, and writing them as Prometheus text.
#include "http/example/service_metrics.h"

#include "http/memory_store.h"

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
  }
  return "unknown";
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

std::string ServiceMetrics::render(Limiter& limiter, const OffenderReporter* reporter) const {
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
  if (reporter) {
    out +=
        "# HELP floodgate_http_offender_reports_total Clients reported to floodgate run for a "
        "ban (http.escalate), by result.\n";
    out += "# TYPE floodgate_http_offender_reports_total counter\n";
    out += "floodgate_http_offender_reports_total{result=\"sent\"} " +
           std::to_string(reporter->reportsSent()) + "\n";
    out += "floodgate_http_offender_reports_total{result=\"error\"} " +
           std::to_string(reporter->reportErrors()) + "\n";
  }
  return out;
}

}  // namespace floodgate::http::example
