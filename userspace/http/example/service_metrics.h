// SPDX-License-Identifier: MIT
// The example service's counters, served on /metrics in the Prometheus text format.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "floodgate/core/limiter.h"
#include "floodgate/core/live_limiter.h"
#include "floodgate/fleet/live_reporter.h"

namespace floodgate::http::example {

// Thread-safe counters:
//   floodgate_http_requests_total{route,code}      every response the service sent
//   floodgate_http_decisions_total{policy,outcome} every policy decision (outcome:
//       allowed | rejected | cost_exceeds_burst | store_unavailable | overloaded |
//       ambiguous_key)
//   floodgate_http_store_keys{policy}              keys held per policy (read at scrape)
// with http.shedding:
//   floodgate_http_priority_requests_total{class,result}  admitted | shed, per class
//   floodgate_http_priority_max_in_flight{class}   each class's threshold
//   floodgate_http_in_flight                       requests admitted and not yet answered
// with http.adaptive_concurrency:
//   floodgate_http_adaptive_limit                  requests that may be in flight now
//   floodgate_http_adaptive_latency_seconds{estimate}  no_load | recent
// following published policies (--policies):
//   floodgate_http_policy_reloads_total{result}    published sets applied | refused
//   floodgate_http_policy_version{version}         1 for the version enforced
// and with the redis store:
//   floodgate_http_store_errors_total{policy}      failed calls to Redis
//   floodgate_http_store_fallback_decisions_total{policy,mode,outcome}  failure-mode decisions
//   floodgate_http_store_breaker_state{state}      1 for the breaker's state (closed, open,
//       half_open), 0 for the others; floodgate_http_store_breaker_opened_total
//   floodgate_http_prefetch_stranded_units{policy} leased units held here, unspent
//   floodgate_http_prefetch_leases_total{policy}   round trips that leased
//   floodgate_http_store_live_instances            instances heartbeating, at the last beat
//   floodgate_http_store_share_divisor             what local shares divide limits by
class ServiceMetrics {
 public:
  void countResponse(const std::string& route, int code);
  void countVerdict(const Verdict& verdict);
  // The whole exposition; `limiter` supplies the store gauges.
  // `reporter` may be null, and reports nothing while no http.escalate is set; `live` may
  // be null (policies not followed).
  std::string render(Limiter& limiter, const LiveReporter* reporter = nullptr,
                     const LiveLimiter* live = nullptr) const;

 private:
  std::string renderSharedStore(Limiter& limiter) const;
  static std::string renderShedding(const Shedder& shedder);

  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, int64_t> responses_;
  std::map<std::pair<std::string, std::string>, int64_t> decisions_;
};

}  // namespace floodgate::http::example
