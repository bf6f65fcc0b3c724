// SPDX-License-Identifier: MIT
// DaemonState: validate everything first, then hand each part what the config says.
#include "daemon/daemon_state.h"

#include "config/floodgate_config.h"
#include "controller/frame_size_warnings.h"
#include "controller/vlan_cookie_warning.h"
#include "daemon/log.h"
#include "floodgate/common/units.h"
#include "floodgate/fleet/policy_publisher.h"

namespace floodgate::daemon {
namespace {

// Splits the diagnostics block into one log line each.
void logDiagnostics(const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) logError(text.substr(start, end - start));
    start = end + 1;
  }
}

// Hands the http: policies of the config text applied to services (http.publish). A failure
// leaves the XDP side as applied and the services on the policies they have: logged, never
// fatal.
void publishHttpPolicies(const std::string& text, const std::string& config_path) {
  auto report = http::publishHttpPolicyText(text, config_path);
  if (!report) {
    logError(report.error().message + " (services keep the policies they have)");
    return;
  }
  logInfo(report->describe());
}

uint64_t steadyNowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

Status DaemonState::apply(bool initial) {
  Status status;
  std::optional<std::string> publish;
  {
    const AnswerLock::Hold hold(answer_lock_);
    status = applyLocked(publish);
    if (!initial) {
      if (status) {
        ++reloads_success_;
      } else {
        ++reloads_failure_;
      }
    }
    if (status) ++generation_;
    // the answers kept for requests while a later apply holds the state: as of this one, so
    // the first request of all, or one after a quiet spell, is not answered from older ones
    keepScrapeLocked();
    keepProblemsLocked();
  }
  // Outside the lock: a slow Redis must not hold up scrapes. apply() runs on the event loop
  // only, so publishes happen in the order of the configs applied.
  if (status && publish) publishHttpPolicies(*publish, config_path_);
  return status;
}

Status DaemonState::applyLocked(std::optional<std::string>& publish) {
  // one read: what is applied and what is published are the same text, whatever is
  // written to the file meanwhile
  std::string text;
  config::Diagnostics diagnostics;
  config::FloodgateConfig cfg = config::loadConfig(config_path_, diagnostics, &text);
  if (!diagnostics.empty()) {
    logDiagnostics(diagnostics.format());
    return Error::failure(config_path_ + " is not valid (" +
                          counted(diagnostics.size(), "problem", "problems") +
                          "): the running rules stay");
  }
  if (cfg.interfaces.empty()) {
    return Error::failure(
        config_path_ + " lists no interfaces: 'floodgate run' attaches those under 'interfaces:'");
  }
  // Every interface's options first, so a config wrong for one changes none.
  std::vector<WantedInterface> wanted;
  for (const auto& iface : cfg.interfaces) {
    auto options = config::attachOptionsFor(cfg, iface.name);
    if (!options) return options.error();
    wanted.push_back({std::move(*options), iface.adaptive});
  }
  ReporterAccess access;
  if (cfg.http && cfg.http->escalate.enabled) {
    auto resolved = ReporterAccess::resolve(cfg.http->escalate);
    if (!resolved) return Error::failure(resolved.error().message + " (the running rules stay)");
    access = std::move(*resolved);
  }

  if (Status s = interfaces_.apply(wanted); !s) return s;
  // what `floodgate check` warns of, logged at every start and reload that applies it
  for (const std::string& warning : config::configWarnings(cfg)) {
    logWarning(config_path_ + ": " + warning);
  }
  for (const WantedInterface& one : wanted) {
    for (const std::string& warning : frameSizeWarnings(one.options)) logWarning(warning);
    if (auto warning = vlanCookieWarning(one.options)) logWarning(*warning);
  }
  escalator_.config().rules =
      escalationRules(cfg.allow.value_or(std::vector<Cidr>{}), cfg.http ? &*cfg.http : nullptr);
  std::vector<Cidr> services =
      serviceAddresses(cfg.fleet_bans.redis, cfg.http ? &*cfg.http : nullptr);
  escalator_.config().rules.services = services;
  syncReports(cfg.http ? &*cfg.http : nullptr, std::move(access));
  fleet_bans_.sync(cfg.fleet_bans, escalator_.config().rules.allow,
                   escalator_.config().rules.trusted_proxies, services);
  if (cfg.http && cfg.http->publish.enabled()) publish = std::move(text);
  monitor_ = cfg.defaults.monitor;
  return okStatus();
}

void DaemonState::attachAppeared() {
  const AnswerLock::Hold hold(answer_lock_);
  interfaces_.attachAppeared();
  keepProblemsLocked();  // an interface that appeared and was attached is healthy now
}

void DaemonState::syncReports(const http::HttpConfig* http, ReporterAccess access) {
  EscalationConfig& escalation = escalator_.config();
  escalation.access = std::move(access);
  escalation.escalate = http ? http->escalate : http::EscalateConfig{};
  report_sources_.sync(http, escalation.access);
}

// Acts on what services reported: bounded work per loop turn, whatever reporters send.
void DaemonState::handleReports() {
  const auto now = std::chrono::steady_clock::now();
  // The stream's reports wait for the fleet's lifts a start reads back: one signed before
  // its prefix's last lift is refused (EscalationMemory::noteLift), once that lift is known.
  const bool stream = !fleet_bans_.replayPending(now);
  for (const ReceivedReport& received : report_sources_.drain(256, stream)) {
    const uint64_t ban_ns = escalator_.handle(received, interfaces_, now);
    // A report read from the stream reached every controller of the fleet already.
    if (ban_ns != 0 && received.over_socket && !monitor_) {
      fleet_bans_.publish(report::BanKind::kEscalation, received.report->address, ban_ns);
    }
  }
  escalator_.forgetEnded(now);
}

// Applies what the fleet shared, in the order read: bounded work per loop turn, however much
// it holds.
void DaemonState::handleFleetBans() {
  for (const FleetBanVerdict& ban : fleet_bans_.drain(256, std::chrono::steady_clock::now())) {
    const Cidr& address = ban.record.address;
    if (ban.lift) {
      // lifted here or not, the reports of it signed before the lift ban it no more
      escalator_.noteLift(address, ban.signed_ms, ban.read_ms);
      const HeldInterfaces::Lifted lifted = interfaces_.liftEverywhere(address, ban.lift_age_ns);
      if (lifted.answered == 0 && !interfaces_.empty()) {
        fleet_bans_.count(metrics::kFleetBanFailed);
        continue;
      }
      fleet_bans_.count(metrics::kFleetBanLifted);
      // Whether or not a ban was lifted here: on the host whose `ban del --config` made the
      // lift, the command lifted it already. An escalation's ban started after the lift was
      // signed (a lift read late) stands, and the next report of it signed after the lift
      // extends it again.
      escalator_.forgetBan(address);
      logInfo("event=fleet_lift source=" + address.toString() + " lifted_on=" +
              std::to_string(lifted.lifted) + " publisher=\"" + ban.publisher + "\"");
      continue;
    }
    const HeldInterfaces::Banned banned =
        interfaces_.banEverywhere(address, ban.ban_ns, BanOrigin::kFleet, fleet_bans_.maxEntries());
    if (banned.on == 0 && !interfaces_.empty()) {
      fleet_bans_.count(banned.no_room ? metrics::kFleetBanNoRoom : metrics::kFleetBanFailed);
      continue;
    }
    fleet_bans_.count(metrics::kFleetBanApplied);
    logInfo("event=fleet_ban source=" + address.toString() + " ban=" + formatDuration(ban.ban_ns) +
            " kind=" + report::banKindName(ban.record.kind) + " publisher=\"" + ban.publisher +
            "\"");
  }
}

std::vector<int> DaemonState::eventFds() {
  const AnswerLock::Hold hold(answer_lock_);
  std::vector<int> fds = interfaces_.eventFds();
  // not the report stream's while it waits (handleReports), or the loop would spin on it
  for (int fd : report_sources_.fds(!fleet_bans_.replayPending(std::chrono::steady_clock::now()))) {
    fds.push_back(fd);
  }
  for (int fd : fleet_bans_.fds()) fds.push_back(fd);
  return fds;
}

void DaemonState::pumpEvents(EventLog& log) {
  std::vector<LogLine> lines;
  {
    const AnswerLock::Hold hold(answer_lock_);
    const auto now = EventLog::Clock::now();
    std::vector<HeldInterfaces::RuleBan> rule_bans;
    interfaces_.pumpEvents(log, now, lines, rule_bans);
    log.flush(now, lines);
    for (const HeldInterfaces::RuleBan& ban : rule_bans) {
      fleet_bans_.publish(report::BanKind::kRule, ban.source, ban.ban_ns);
    }
    handleReports();
    handleFleetBans();
  }
  for (const LogLine& line : lines) {
    if (line.warning) {
      logWarning(line.text);
    } else {
      logInfo(line.text);
    }
  }
}

void DaemonState::adapt() {
  std::vector<LogLine> lines;
  {
    const AnswerLock::Hold hold(answer_lock_);
    interfaces_.adapt(steadyNowNs(), lines);
  }
  for (const LogLine& line : lines) {
    if (line.warning) {
      logWarning(line.text);
    } else {
      logInfo(line.text);
    }
  }
}

std::chrono::milliseconds DaemonState::untilAdapt() {
  const AnswerLock::Hold hold(answer_lock_);
  const uint64_t next = interfaces_.nextAdaptNs();
  if (next == UINT64_MAX) return std::chrono::milliseconds::max();
  const uint64_t now = steadyNowNs();
  return std::chrono::milliseconds(next > now ? (next - now + 999'999) / 1'000'000 : 0);
}

void DaemonState::housekeep() {
  std::vector<std::string> warnings;
  {
    const AnswerLock::Hold hold(answer_lock_);
    interfaces_.housekeep(warnings);
  }
  for (const std::string& line : warnings) logWarning(line);
}

void DaemonState::release(bool keep_attached) {
  const AnswerLock::Hold hold(answer_lock_);
  interfaces_.closeEvents();
  report_sources_.close();
  fleet_bans_.close();
  interfaces_.release(keep_attached);
}

void DaemonState::releaseAfterFailedStart() {
  const AnswerLock::Hold hold(answer_lock_);
  interfaces_.releaseAfterFailedStart();
  report_sources_.close();
  fleet_bans_.close();
}

std::string DaemonState::scrape() {
  {
    std::lock_guard last(last_mutex_);
    if (!last_scrape_.empty() && !scrape_pace_.due(ScrapePace::Clock::now())) return last_scrape_;
  }
  std::unique_lock lock = answer_lock_.forRequest();
  if (!answer_lock_.lock(lock)) {
    {
      std::lock_guard last(last_mutex_);
      if (!last_scrape_.empty()) {
        return "# floodgate is busy (applying a config, or waiting for another command's lock): "
               "these "
               "are the values of the last scrape\n" +
               last_scrape_;
      }
    }
    lock.lock();  // nothing kept yet (before the first apply): wait
  }
  return keepScrapeLocked();
}

std::string DaemonState::keepScrapeLocked() {
  metrics::Snapshot snapshot;
  snapshot.version = FLOODGATE_VERSION;
  snapshot.reloads_success = reloads_success_;
  snapshot.reloads_failure = reloads_failure_;
  snapshot.config_generation = generation_;
  snapshot.escalations = escalator_.counts();
  snapshot.fleet_bans_received = fleet_bans_.received();
  snapshot.fleet_bans_published = fleet_bans_.published();
  interfaces_.collect(snapshot);
  std::string text = metrics::render(snapshot);
  std::lock_guard last(last_mutex_);
  last_scrape_ = text;
  return text;
}

std::vector<std::string> DaemonState::problems() {
  {
    // at the pace of /metrics: each fresh answer looks at every interface under the lock
    std::lock_guard last(last_mutex_);
    if (last_problems_ && !health_pace_.due(ScrapePace::Clock::now())) return *last_problems_;
  }
  std::unique_lock lock = answer_lock_.forRequest();
  if (!answer_lock_.lock(lock)) {
    {
      std::lock_guard last(last_mutex_);
      if (last_problems_) return *last_problems_;
    }
    lock.lock();
  }
  return keepProblemsLocked();
}

std::vector<std::string> DaemonState::keepProblemsLocked() {
  std::vector<std::string> found = interfaces_.problems();
  std::lock_guard last(last_mutex_);
  last_problems_ = found;
  return found;
}

}  // namespace floodgate::daemon
