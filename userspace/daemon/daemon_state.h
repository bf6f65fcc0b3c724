// SPDX-License-Identifier: MIT
// DaemonState: what the daemon runs, shared between the event loop (which applies configs)
// and the metrics server's threads (which read them). It composes the interfaces it holds
// (held_interfaces.h), the report sources (report_sources.h), what reports lead to
// (escalator.h) and the bans shared with the fleet (fleet_bans.h), and keeps the reload
// counters. Every public method is thread-safe (one mutex; a scrape holds it for a few map
// reads). A reload or an attach can hold it for seconds (the verifier, another attach's
// lock): a scrape or health check that waits too long meanwhile is answered from the last
// one, so Prometheus keeps its series through the reload that an incident calls for; the
// short holds of the event loop are waited for (answer_lock.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/answer_lock.h"
#include "daemon/escalation_guard.h"
#include "daemon/escalator.h"
#include "daemon/event_log.h"
#include "daemon/fleet_bans.h"
#include "daemon/held_interfaces.h"
#include "daemon/report_sources.h"
#include "daemon/scrape_pace.h"
#include "floodgate/common/result.h"
#include "floodgate/core/policy.h"

namespace floodgate::daemon {

class DaemonState {
 public:
  explicit DaemonState(std::string config_path) : config_path_(std::move(config_path)) {}

  // Reads and validates the config, then brings every listed interface in line with it:
  // attaches those with no limiter, adopts a pinned limiter (open + reload, no state lost),
  // reloads the ones it holds, and detaches those no longer listed. A listed interface that
  // does not exist is logged once and waited for (see attachAppeared), not an error. Invalid:
  // nothing changes, every diagnostic is logged. Counts the result in the reload counters
  // unless `initial`.
  Status apply(bool initial);
  // Attaches the listed interfaces that did not exist and now do (the caller decides how
  // often). A failure is logged once per distinct message and tried again next time.
  void attachAppeared();

  // Detaches every interface it holds (or, with keep_attached, lets go of them enforcing).
  void release(bool keep_attached);
  // After a failed start: detaches what this run attached, but leaves a limiter it adopted
  // enforcing as it found it.
  void releaseAfterFailedStart();

  // The Prometheus exposition of every held interface; when an apply or an attach holds the
  // state longer than kBusyWait, the last one made (by a scrape or an apply), marked by a
  // comment line; and the last one as it was past ScrapePace's pace.
  std::string scrape();
  // What keeps the daemon from being healthy, one line per configured interface that does
  // not exist or has no limiter attached; empty when every one has its limiter. The last
  // answer made (by a health check, an apply or an attach of an interface that appeared)
  // when an apply or an attach holds the state longer than kBusyWait.
  std::vector<std::string> problems();
  bool healthy() { return problems().empty(); }

  // Descriptors that turn readable when a held interface has events waiting.
  std::vector<int> eventFds();
  // Reads every waiting event, counts it and logs it through `log` (aggregated); then acts
  // on the reports of abusive client IPs services sent (http.escalate) and applies the bans
  // the fleet shared (fleet.bans), publishing the bans this host started that it shares.
  void pumpEvents(EventLog& log);
  // Feeds the adaptive interfaces whose interval is over their load, applies and logs what
  // their governors decide (adaptive:).
  void adapt();
  // How long until adapt() has work; milliseconds::max() when no interface is adaptive.
  std::chrono::milliseconds untilAdapt();
  // Now and then (the caller decides how often): deletes the bans that are over on every
  // held interface, and logs once when rule bans found the ban table full since last time.
  void housekeep();

 private:
  // `publish`: the config text applied, when its http.publish asks for it to be published.
  Status applyLocked(std::optional<std::string>& publish);
  // Follows the config's http.escalate: what reports lead to and where they come from.
  void syncReports(const http::HttpConfig* http, ReporterAccess access);
  void handleReports();
  void handleFleetBans();

  static constexpr std::chrono::milliseconds kBusyWait{500};
  // The daemon's lock, over everything below but last_mutex_'s: a scrape or a health answer
  // locks it through answer_lock_.lock(), every other section by an AnswerLock::Hold, so
  // a request waits for one hold once, not each request in turn.
  AnswerLock answer_lock_{kBusyWait};
  // Make the answers of a scrape and of a health check, keep them for when the lock is busy,
  // and return them; the lock held.
  std::string keepScrapeLocked();
  std::vector<std::string> keepProblemsLocked();

  std::string config_path_;
  // The last scrape and health answer, for when the lock is busy (guarded by last_mutex_).
  std::mutex last_mutex_;
  std::string last_scrape_;
  ScrapePace scrape_pace_;  // guarded by last_mutex_
  ScrapePace health_pace_;  // guarded by last_mutex_
  std::optional<std::vector<std::string>> last_problems_;
  HeldInterfaces interfaces_;
  ReportSources report_sources_;  // http.escalate: the report socket and stream
  Escalator escalator_;           // what reports lead to
  FleetBans fleet_bans_;          // fleet.bans: the bans shared with the fleet
  // defaults.monitor of the config applied: this host's bans only count, so its
  // escalations are not shared with a fleet whose hosts would drop their sources
  bool monitor_ = false;
  uint64_t reloads_success_ = 0;
  uint64_t reloads_failure_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace floodgate::daemon
