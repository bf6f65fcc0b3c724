// SPDX-License-Identifier: MIT
// DaemonState: validate everything first, then attach, adopt or reload each interface.
#include "daemon/daemon_state.h"

#include <algorithm>

#include "config/floodgate_config.h"
#include "daemon/log.h"
#include "floodgate/common/units.h"
#include "floodgate/fleet/policy_publisher.h"
#include "kernel/system.h"
#include "metrics/collect.h"

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

// A link pin is what keeps the program attached (detach removes it).
bool attached(const std::string& interface) {
  for (const std::string& name : Limiter::attachedInterfaces()) {
    if (name == interface) return true;
  }
  return false;
}

// Hands the http: policies to services (http.publish). A failure leaves the XDP side as
// applied and the services on the policies they have: logged, never fatal.
void publishHttpPolicies(const std::string& config_path) {
  auto report = http::publishHttpPolicies(config_path);
  if (!report) {
    logError(report.error().message + " (services keep the policies they have)");
    return;
  }
  logInfo(report->describe());
}

}  // namespace

Status DaemonState::apply(bool initial) {
  Status status;
  bool publish = false;
  {
    std::lock_guard lock(mutex_);
    status = applyLocked(publish);
    if (!initial) {
      if (status) {
        ++reloads_success_;
      } else {
        ++reloads_failure_;
      }
    }
    if (status) ++generation_;
  }
  // Outside the lock: a slow Redis must not hold up scrapes. apply() runs on the event loop
  // only, so publishes happen in the order of the configs applied.
  if (status && publish) publishHttpPolicies(config_path_);
  return status;
}

Status DaemonState::applyLocked(bool& publish) {
  config::Diagnostics diagnostics;
  config::FloodgateConfig cfg = config::loadConfig(config_path_, diagnostics);
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
  std::vector<AttachOptions> wanted;
  for (const auto& iface : cfg.interfaces) {
    auto options = config::attachOptionsFor(cfg, iface.name);
    if (!options) return options.error();
    wanted.push_back(std::move(*options));
  }
  ReporterAccess access;
  if (cfg.http && cfg.http->escalate.enabled) {
    auto resolved = ReporterAccess::resolve(cfg.http->escalate);
    if (!resolved) return Error::failure(resolved.error().message + " (the running rules stay)");
    access = std::move(*resolved);
  }

  for (auto it = limiters_.begin(); it != limiters_.end();) {
    bool listed = false;
    for (const auto& options : wanted) listed |= options.interface == it->first;
    if (listed) {
      ++it;
      continue;
    }
    Status s = Limiter::detach(it->first);
    logInfo(s ? "detached " + it->first + ": no longer in the config"
              : "could not detach " + it->first + ": " + s.error().message);
    sample_cursors_.erase(it->first);
    readers_.erase(it->first);
    it = limiters_.erase(it);
  }

  std::map<std::string, AttachOptions> waiting;
  for (const AttachOptions& options : wanted) {
    const std::string& name = options.interface;
    auto held = limiters_.find(name);
    if (held != limiters_.end() && !attached(name)) {
      // Detached by someone else (`floodgate detach`): the held maps are orphans.
      logWarning(name + " was detached outside the daemon: attaching it again");
      readers_.erase(name);
      limiters_.erase(held);
      held = limiters_.end();
    }
    if (held != limiters_.end()) {
      if (Status s = held->second.reload(options); !s)
        return Error::failure(name + ": " + s.error().message);
      logInfo("reloaded " + name + " (" + counted(options.rules.size(), "rule", "rules") + ")");
      continue;
    }
    if (auto exists = interfaceIndex(name); !exists) {
      // A host without this NIC (yet): attach the others, report it, attach it when it
      // appears. Failing the start would only loop under systemd's Restart=on-failure.
      if (!waiting_.contains(name)) {
        logWarning(exists.error().message +
                   ": attached when it appears; until then /healthz "
                   "answers 503 and floodgate_interface_up{interface=\"" +
                   name + "\"} is 0");
      }
      waiting.emplace(name, options);
      continue;
    }
    if (Status s = attachOrAdopt(options, ""); !s) return s;
  }
  waiting_ = std::move(waiting);
  std::erase_if(attach_failures_, [&](const auto& f) { return !waiting_.contains(f.first); });
  configured_.clear();
  for (const auto& options : wanted) configured_.push_back(options.interface);
  escalation_.rules =
      escalationRules(cfg.allow.value_or(std::vector<Cidr>{}), cfg.http ? &*cfg.http : nullptr);
  syncReports(cfg.http ? &*cfg.http : nullptr, std::move(access));
  publish = cfg.http && cfg.http->publish.enabled();
  return okStatus();
}

Status DaemonState::attachOrAdopt(const AttachOptions& options, const std::string& why) {
  const std::string& name = options.interface;
  if (attached(name)) {
    // A limiter left enforcing (a restart after --keep-attached): keep its buckets.
    auto limiter = Limiter::open(name);
    if (!limiter) return limiter.error();
    if (Status s = limiter->reload(options); !s)
      return Error::failure(name + ": " + s.error().message);
    logInfo("adopted the limiter already attached to " + name + " (" +
            counted(options.rules.size(), "rule", "rules") + "; its state is kept)" + why);
    hold(name, std::move(*limiter));
    adopted_.push_back(name);
    return okStatus();
  }
  auto report = Limiter::attach(options);
  if (!report) return Error::failure(name + ": " + report.error().message);
  for (const std::string& warning : report->warnings) logWarning(name + ": " + warning);
  auto limiter = Limiter::open(name);
  if (!limiter) return limiter.error();
  logInfo("attached to " + name + " (" + counted(options.rules.size(), "rule", "rules") + ")" +
          why);
  hold(name, std::move(*limiter));
  return okStatus();
}

void DaemonState::attachAppeared() {
  std::lock_guard lock(mutex_);
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const std::string name = it->first;
    if (limiters_.contains(name)) {  // attached by an apply that failed after it
      attach_failures_.erase(name);
      it = waiting_.erase(it);
      continue;
    }
    if (!interfaceIndex(name)) {
      ++it;
      continue;
    }
    if (Status s = attachOrAdopt(it->second, ": it appeared"); !s) {
      std::string& last = attach_failures_[name];
      if (last != s.error().message) logError(s.error().message + " (tried again every second)");
      last = s.error().message;
      ++it;
      continue;
    }
    attach_failures_.erase(name);
    it = waiting_.erase(it);
  }
}

void DaemonState::syncReports(const http::HttpConfig* http, ReporterAccess access) {
  escalation_.access = std::move(access);
  escalation_.escalate = http ? http->escalate : http::EscalateConfig{};
  report_sources_.sync(http, escalation_.access);
}

// Acts on what services reported: bounded work per loop turn, whatever reporters send.
void DaemonState::handleReports() {
  const auto now = std::chrono::steady_clock::now();
  for (const ReceivedReport& received : report_sources_.drain(256)) handleReport(received, now);
  auto& banned_until = escalation_memory_.banned_until;
  for (auto it = banned_until.begin(); it != banned_until.end();) {
    it = now >= it->second ? banned_until.erase(it) : std::next(it);
  }
}

const std::vector<Cidr>& DaemonState::ownAddresses(std::chrono::steady_clock::time_point now) {
  if (own_addresses_read_ == std::chrono::steady_clock::time_point{} ||
      now - own_addresses_read_ >= std::chrono::seconds(5)) {
    if (auto addresses = hostAddresses(); addresses) {
      own_addresses_ = std::move(*addresses);
      own_addresses_read_ = now;
    } else {
      logWarning(addresses.error().message + ": the last list read stays in use");
    }
  }
  return own_addresses_;
}

void DaemonState::refuse(metrics::EscalationResult result, const ReceivedReport& received,
                         const std::string& why, std::chrono::steady_clock::time_point now) {
  ++escalations_[result];
  auto& logged = refusal_logged_[result];
  if (logged != std::chrono::steady_clock::time_point{} &&
      now - logged < std::chrono::seconds(10)) {
    return;  // a flood of one kind is one line per 10 s; the counter has every one
  }
  logged = now;
  logWarning(std::string("event=escalation_refused result=") +
             metrics::kEscalationResultNames[result] + " reporter=\"" + printable(received.sender) +
             "\" why=\"" + printable(why) + "\"");
}

// Acts on what escalation_policy.h decides: bans the reported client on every held
// interface, or counts (and maybe logs) why not.
void DaemonState::handleReport(const ReceivedReport& received,
                               std::chrono::steady_clock::time_point now) {
  const EscalationDecision decision =
      decideEscalation(received, escalation_, ownAddresses(now), escalation_memory_, now);
  if (decision.result != metrics::kEscalationBanned) {
    if (decision.why.empty()) {
      ++escalations_[decision.result];
    } else {
      refuse(decision.result, received, decision.why, now);
    }
    return;
  }
  escalation_memory_.quota.take(received.reporter, escalation_.escalate.max_bans_per_minute, now);
  const Cidr& address = received.report->address;
  const std::string text = address.toString();
  // An escalation never shortens a ban already running (a manual one, or a longer one
  // from another report): it only extends.
  size_t banned_on = 0;
  for (auto& [name, limiter] : limiters_) {
    if (Status s =
            limiter.banAdd(address, decision.ban_ns, BanUpdate::kExtend, BanOrigin::kEscalation);
        !s) {
      logError("could not ban " + text + " on " + name + ": " + s.error().message);
    } else {
      ++banned_on;
    }
  }
  // Not banned anywhere (a table full, a writer holding the lock): the next report of it
  // tries again instead of being taken for a repeat.
  if (banned_on == 0 && !limiters_.empty()) return;
  ++escalations_[metrics::kEscalationBanned];
  escalation_memory_.banned_until[text] = now + std::chrono::nanoseconds(decision.ban_ns);
  logWarning("event=escalated source=" + text + " ban=" + formatDuration(decision.ban_ns) +
             " rejections=" + std::to_string(received.report->rejections) +
             " within_ms=" + std::to_string(received.report->within_ms) + " reporter=\"" +
             printable(received.sender) + "\"");
}

void DaemonState::hold(const std::string& name, Limiter limiter) {
  limiters_.emplace(name, std::move(limiter));
  auto reader = EventReader::open(name);
  if (!reader) {
    logWarning(name + ": its events will not be logged: " + reader.error().message);
    return;
  }
  readers_.insert_or_assign(name, std::move(*reader));
}

std::vector<int> DaemonState::eventFds() {
  std::lock_guard lock(mutex_);
  std::vector<int> fds;
  for (const auto& [name, reader] : readers_) fds.push_back(reader.pollFd());
  for (int fd : report_sources_.fds()) fds.push_back(fd);
  return fds;
}

void DaemonState::pumpEvents(EventLog& log) {
  std::vector<LogLine> lines;
  {
    std::lock_guard lock(mutex_);
    const auto now = EventLog::Clock::now();
    for (auto& [name, reader] : readers_) {
      auto events = reader.drain();
      if (!events) {
        logWarning(name + ": " + events.error().message);
        continue;
      }
      if (events->empty()) continue;
      auto active = limiters_.at(name).activeRules();
      const std::vector<fg_rule> rules = active ? *active : std::vector<fg_rule>{};
      auto& counts = events_read_[name];
      for (const LimiterEvent& event : *events) {
        if (event.type < FG_EVENT_TYPES) ++counts[event.type];
        log.note(name, event, banStartedBy(event.rule_id, rules), now, lines);
      }
    }
    log.flush(now, lines);
    handleReports();
  }
  for (const LogLine& line : lines) {
    if (line.warning) {
      logWarning(line.text);
    } else {
      logInfo(line.text);
    }
  }
}

void DaemonState::housekeep() {
  std::vector<std::string> warnings;
  {
    std::lock_guard lock(mutex_);
    for (auto& [name, limiter] : limiters_) {
      if (auto swept = limiter.sweepExpiredBans(); !swept) {
        warnings.push_back(name + ": cannot sweep expired bans: " + swept.error().message);
      }
      auto rules = limiter.ruleCounters();
      if (!rules) continue;
      uint64_t failed = 0;
      for (const RuleCounters& rule : *rules) failed += rule.table[FG_TABLE_BAN_FAILED];
      uint64_t& seen = bans_failed_seen_[name];
      if (failed > seen) {
        warnings.push_back(
            "event=bans_failed interface=" + name + " count=" + std::to_string(failed - seen) +
            " reason=\"rule bans filled the ban table up to the " + std::to_string(FG_BAN_RESERVE) +
            " entries kept for manual bans and escalations\"");
      }
      seen = failed;
    }
  }
  for (const std::string& line : warnings) logWarning(line);
}

void DaemonState::closeEventSources() {
  readers_.clear();
  report_sources_.close();
}

void DaemonState::release(bool keep_attached) {
  std::lock_guard lock(mutex_);
  closeEventSources();
  for (const auto& [name, limiter] : limiters_) {
    if (keep_attached) {
      logInfo("leaving " + name + " attached and enforcing (--keep-attached)");
      continue;
    }
    Status s = Limiter::detach(name);
    if (s) {
      logInfo("detached " + name);
    } else {
      logError("could not detach " + name + ": " + s.error().message);
    }
  }
  limiters_.clear();
}

void DaemonState::releaseAfterFailedStart() {
  std::lock_guard lock(mutex_);
  for (const auto& [name, limiter] : limiters_) {
    bool adopted = false;
    for (const std::string& a : adopted_) adopted |= a == name;
    if (adopted) continue;
    Status s = Limiter::detach(name);
    if (!s) logError("could not detach " + name + ": " + s.error().message);
  }
  closeEventSources();
  limiters_.clear();
}

std::string DaemonState::scrape() {
  std::lock_guard lock(mutex_);
  metrics::Snapshot snapshot;
  snapshot.version = FLOODGATE_VERSION;
  snapshot.reloads_success = reloads_success_;
  snapshot.reloads_failure = reloads_failure_;
  snapshot.config_generation = generation_;
  snapshot.escalations = escalations_;
  for (const std::string& name : configured_) {
    snapshot.configured.push_back({name, interfaceIndex(name).ok() && attached(name)});
  }
  for (const auto& [name, limiter] : limiters_) {
    auto one = metrics::collect(limiter, &sample_cursors_[name]);
    if (one) {
      if (auto read = events_read_.find(name); read != events_read_.end())
        one->events = read->second;
      snapshot.interfaces.push_back(std::move(*one));
    } else {
      logWarning("metrics of " + name + " unavailable: " + one.error().message);
    }
  }
  return metrics::render(snapshot);
}

std::vector<std::string> DaemonState::problems() {
  std::lock_guard lock(mutex_);
  if (configured_.empty()) return {"no config has been applied"};
  std::vector<std::string> out;
  for (const std::string& name : configured_) {
    if (!interfaceIndex(name)) {
      out.push_back(name + ": no such interface (attached when it appears)");
    } else if (!attached(name)) {
      out.push_back(name + ": no limiter attached");
    }
  }
  return out;
}

}  // namespace floodgate::daemon
