// SPDX-License-Identifier: MIT
// LiveReporter: the OffenderReporter of a LiveLimiter's current policy set. A published set
// that changes http.escalate (its threshold, window, ban, socket or stream, or the store a
// stream lives on) takes effect without a restart: the next rejection is counted by a
// reporter made for the new settings (its counts start over); a set without http.escalate
// reports nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "floodgate/core/live_limiter.h"
#include "floodgate/fleet/offender_reporter.h"

namespace floodgate::http {

class LiveReporter {
 public:
  // `log` hears about a new set's escalation that could not be set up (the last one stays).
  LiveReporter(std::shared_ptr<LiveLimiter> live, std::shared_ptr<const Clock> clock,
               std::function<void(const std::string&)> log = {});

  // Notes one rejected request of `client_key` (Verdict::client_key) under the current
  // set's http.escalate.
  void noteRejection(std::string_view client_key);

  // Whether the current set escalates (seen at the last rejection or creation).
  bool active() const;
  // Totals over every reporter this one has made.
  uint64_t reportsSent() const;
  uint64_t reportErrors() const;
  uint64_t dropped() const;

 private:
  // Under mutex_: makes the reporter for `limiter`'s set when its escalation differs, and
  // returns the one it replaces, for the caller to retire() without holding the lock.
  std::shared_ptr<OffenderReporter> follow(const std::shared_ptr<Limiter>& limiter);
  // Closes a replaced reporter (which may wait for Redis) and adds its final counts.
  void retire(std::shared_ptr<OffenderReporter> reporter);

  std::shared_ptr<LiveLimiter> live_;
  std::shared_ptr<const Clock> clock_;
  std::function<void(const std::string&)> log_;
  mutable std::mutex mutex_;
  std::weak_ptr<Limiter> seen_;  // the set follow() last looked at
  EscalateConfig escalate_;      // of the reporter's set
  StoreConfig store_;            // where its stream lives
  std::shared_ptr<OffenderReporter> reporter_;
  uint64_t retired_sent_ = 0, retired_errors_ = 0, retired_dropped_ = 0;
};

}  // namespace floodgate::http
