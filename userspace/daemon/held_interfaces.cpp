// SPDX-License-Identifier: MIT
// HeldInterfaces: attach, adopt or reload each listed interface; read what each holds.
#include "daemon/held_interfaces.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "controller/reload_warnings.h"
#include "daemon/adaptive_steps.h"
#include "daemon/log.h"
#include "floodgate/common/units.h"
#include "kernel/attach_lock.h"
#include "kernel/system.h"
#include "kernel/xdp_neighbour.h"
#include "metrics/collect.h"

namespace floodgate::daemon {
namespace {

// A pinned link (or root prog array) is what keeps the program running (detach removes it).
bool attached(const std::string& interface) {
  for (const std::string& name : XdpLimiter::attachedInterfaces()) {
    if (name == interface) return true;
  }
  return false;
}

// Whether the limiter of `name` runs on it: attached, and neither cut off it by the deletion
// of the device it was attached to nor left on that device under another name.
bool enforcing(const std::string& name) {
  if (!attached(name)) return false;
  const XdpLimiter::HookLink hook = XdpLimiter::hookLink(name);
  return hook != XdpLimiter::HookLink::kSevered && hook != XdpLimiter::HookLink::kMoved;
}

// Detaches `name`, logging what became of the program behind floodgate; `why` ends the line.
void detachLogged(const std::string& name, const std::string& why) {
  auto report = XdpLimiter::detach(name);
  if (!report) {
    logError("could not detach " + name + ": " + report.error().message);
    return;
  }
  logInfo("detached " + name + why);
  for (const std::string& note : report->notes) logInfo(name + ": " + note);
}

// Logs a next program the last reload of `limiter` put in place or took away.
void logNextProgram(const std::string& name, const XdpLimiter& limiter) {
  const auto& change = limiter.lastNextProgramChange();
  if (!change || !change->changed) return;
  logInfo(change->after
              ? name + ": " + describeProgram(*change->after) + " now gets what floodgate passes"
              : name + ": no program is behind floodgate any more");
}

}  // namespace

Status HeldInterfaces::apply(const std::vector<WantedInterface>& wanted) {
  // what is reloaded below is the limiter running on each interface, which this reload's
  // config is applied to (or the one it ran, each second, if this reload is refused); an
  // attach or detach by hand under way is waited for, as an attach here would wait
  followReattached(false);
  // A config one attached limiter cannot take (a list longer than the size it runs with) is
  // refused before anything changes, so no interface runs the new rules while another keeps
  // the old and none is detached for a config that is not applied. Each is checked with the
  // options its reload below gets: a held one's as its adaptive state squeezes them, one to
  // adopt (attached, not held) with the config's.
  // (A limiter attached again outside the daemon that does not run its config yet is left
  // out: one that cannot take it must not hold back every other interface's reload. It is
  // given this config below, or each second.)
  for (const WantedInterface& one : wanted) {
    const std::string& name = one.options.interface;
    if (!attached(name) || unapplied_.contains(name) || unopened_.contains(name)) continue;
    AttachOptions options = one.options;
    Status checked = okStatus();
    if (auto held = held_.find(name); held != held_.end()) {
      std::vector<LogLine> unused;
      (void)reconcileAdaptive(held->second.adaptive, one.adaptive, options, unused);
      checked = held->second.limiter.checkReload(options);
    } else if (auto limiter = XdpLimiter::open(name); !limiter) {
      checked = limiter.error();
    } else {
      checked = limiter->checkReload(options);
    }
    if (!checked) {
      return Error::failure(name + ": " + checked.error().message + " (no interface was changed)");
    }
  }
  // New interfaces next, before any other changes: an attach the kernel refuses (a driver
  // without XDP, a root program array that is not there) takes back the attaches before it
  // and leaves the running ones as they were.
  std::set<std::string> fresh;
  for (const WantedInterface& one : wanted) {
    const std::string& name = one.options.interface;
    if (held_.contains(name) || attached(name) || !interfaceIndex(name)) continue;
    if (Status s = attachOrAdopt(one, ""); !s) {
      for (const std::string& done : fresh) {
        detachLogged(done, ": the config that attached it was refused");
        held_.erase(done);
      }
      return Error::failure(s.error().message + " (no interface was changed)");
    }
    fresh.insert(name);
  }
  // Each interface reloaded, with the config and governor it ran before: where a failure
  // further on puts it back, so no interface runs the new config while another keeps the old.
  struct Reloaded {
    std::string name;
    WantedInterface before;
    std::optional<AdaptiveGovernor> governor;
  };
  std::vector<Reloaded> reloaded;
  // limiters attached outside the daemon given this config, with the one they were to get
  std::vector<std::pair<std::string, WantedInterface>> retargeted;
  // The writer lock of every limiter to reload, taken before the first is changed: another
  // command holding one (a `ban add` waiting on a slow disk, a `reload` by hand) then fails
  // this apply while nothing has changed, rather than halfway, where putting back cannot
  // give a rule the reload removed its old buckets again. Only a kernel write failing now
  // takes the way back below. A limiter attached but not held (attached by hand, or left by
  // a run with --keep-attached) is opened here, and adopted below with its lock held since
  // (`adopting` is declared before the guards, which must go first).
  std::set<std::string> reloading;
  std::map<std::string, XdpLimiter> adopting;
  std::vector<WriterLock::Guard> writing;
  for (const WantedInterface& one : wanted) {
    const std::string& name = one.options.interface;
    auto held = held_.find(name);
    if (fresh.contains(name) || !attached(name) || unapplied_.contains(name) ||
        unopened_.contains(name)) {
      continue;
    }
    auto lock = [&]() -> Result<WriterLock::Guard> {
      if (held != held_.end()) return held->second.limiter.holdWrites();
      auto opened = XdpLimiter::open(name);
      if (!opened) return opened.error();
      return adopting.emplace(name, std::move(*opened)).first->second.holdWrites();
    };
    auto guard = lock();
    if (!guard) {
      writing.clear();
      for (const std::string& done : fresh) {
        detachLogged(done, ": the config that attached it was refused");
        held_.erase(done);
      }
      return Error::failure(name + ": " + guard.error().message + " (no interface was changed)");
    }
    writing.push_back(std::move(*guard));
    // Detached and attached again by hand since the look above (a detach waits for the lock
    // taken here, so not after it): the held object's lock is the gone limiter's, and its
    // reload would be refused. Adopted below instead, as one detached outside is attached.
    if (held != held_.end() && !held->second.limiter.holdsPinned()) {
      writing.pop_back();
      continue;
    }
    if (held != held_.end()) reloading.insert(name);
  }
  auto undo = [&](const Error& error) {
    for (auto it = reloaded.rbegin(); it != reloaded.rend(); ++it) {
      HeldInterface& holding = held_.at(it->name);
      AttachOptions back = it->before.options;
      std::vector<LogLine> unused;  // the limits its governor had moved them to
      std::optional<AdaptiveGovernor> governor =
          reconcileAdaptive(it->governor, it->before.adaptive, back, unused);
      if (Status s = holding.limiter.reload(back); !s) {
        logError(it->name + ": could not go back to the config it ran: " + s.error().message);
        continue;
      }
      holding.applied = std::move(it->before);
      unapplied_.erase(it->name);
      rewritten_.erase(it->name);
      holding.adaptive = std::move(governor);
      logWarning(it->name + ": back on the config it ran before the reload that failed");
    }
    // back to the config they were to get: given it each second (again, if they took this one)
    for (auto& [name, before] : retargeted) {
      held_.at(name).applied = std::move(before);
      unapplied_.insert(name);
    }
    for (const std::string& done : fresh) {
      detachLogged(done, ": the config that attached it was refused");
      held_.erase(done);
    }
    return Error::failure(error.message + " (the interfaces it changed before were put back)");
  };

  std::map<std::string, WantedInterface> waiting;
  for (const WantedInterface& one : wanted) {
    const std::string& name = one.options.interface;
    if (fresh.contains(name)) continue;
    auto held = held_.find(name);
    if (held != held_.end() && unopened_.contains(name) && attached(name)) {
      // attached again outside the daemon and not to be opened: not reloaded (its maps
      // would be the detached ones), given this config once it is followed
      held->second.applied = one;
      logWarning(name +
                 ": not reloaded: the limiter attached outside the daemon cannot be "
                 "opened (see the log)");
      continue;
    }
    if (held != held_.end() && unapplied_.contains(name) && attached(name)) {
      // attached again outside the daemon, not on its config yet: given this one now if it
      // takes it, else each second (tryApplyFollowed), as reported meanwhile
      retargeted.emplace_back(name, std::exchange(held->second.applied, one));
      if (!foreign_.contains(name)) tryApplyFollowed(name);  // once floodgate's is back
      continue;
    }
    if (held != held_.end() && !reloading.contains(name)) {
      // Detached by someone else (`floodgate detach`, and perhaps attached again since): the
      // held maps are orphans.
      logWarning(name + (attached(name) ? " was attached again outside the daemon: adopting it"
                                        : " was detached outside the daemon: attaching it again"));
      held_.erase(held);
      unapplied_.erase(name);
      rewritten_.erase(name);
      held = held_.end();
    }
    if (held != held_.end()) {
      HeldInterface& holding = held->second;
      AttachOptions options = one.options;
      std::vector<LogLine> lines;
      std::optional<AdaptiveGovernor> adaptive =
          reconcileAdaptive(holding.adaptive, one.adaptive, options, lines);
      // the sizes and mode, not the walk of the table: every reloaded lock is held here
      if (auto status = holding.limiter.summary(); status) {
        for (const std::string& warning : reloadKeepsWarnings(*status, options)) {
          logWarning(name + ": " + warning);
        }
      }
      if (Status s = holding.limiter.reload(options); !s) {
        // its own rules may run already (a write after them failed): back on the old too
        reloaded.push_back({name, holding.applied, holding.adaptive});
        return undo(Error::failure(name + ": " + s.error().message));
      }
      reloaded.push_back({name, std::exchange(holding.applied, one), holding.adaptive});
      holding.adaptive = std::move(adaptive);
      unapplied_.erase(name);
      rewritten_.erase(name);
      logInfo("reloaded " + name + " (" + counted(options.rules.size(), "rule", "rules") + ")" +
              (foreign_.contains(name)
                   ? "; its link runs a program that does not use its maps, so nothing limits it "
                     "(see the log)"
                   : ""));
      logNextProgram(name, holding.limiter);
      for (const LogLine& line : lines) logInfo(line.text);
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
      waiting.emplace(name, one);
      continue;
    }
    const bool was_attached = attached(name);
    auto opened = adopting.find(name);
    if (Status s = attachOrAdopt(one, "", opened == adopting.end() ? nullptr : &opened->second);
        !s) {
      return undo(s.error());
    }
    // attached here (one that was detached behind the daemon's back, too): taken back by a
    // failure further on, as the new interfaces are
    if (!was_attached) fresh.insert(name);
  }
  // Let go last, once every other change was made: a failure above leaves them attached.
  for (auto it = held_.begin(); it != held_.end();) {
    bool listed = false;
    for (const auto& one : wanted) listed |= one.options.interface == it->first;
    if (listed) {
      ++it;
      continue;
    }
    detachLogged(it->first, ": no longer in the config");
    it = held_.erase(it);
  }
  waiting_ = std::move(waiting);
  std::erase_if(attach_failures_, [&](const auto& f) { return !waiting_.contains(f.first); });
  configured_.clear();
  rule_ban_ns_.clear();
  for (const auto& one : wanted) {
    configured_.push_back(one.options.interface);
    for (const RuleSpec& rule : one.options.rules) {
      if (rule.action == ExceedAction::kBan) rule_ban_ns_[rule.name] = rule.ban_ns;
    }
  }
  return okStatus();
}

Status HeldInterfaces::attachOrAdopt(const WantedInterface& wanted, const std::string& why,
                                     XdpLimiter* opened) {
  const AttachOptions& options = wanted.options;
  const std::string& name = options.interface;
  // A new governor: the limits start at the configured ones (those a restart finds squeezed
  // by an earlier run are reset by the reload below).
  std::vector<LogLine> unused;
  AttachOptions unchanged = options;
  std::optional<AdaptiveGovernor> adaptive =
      reconcileAdaptive(std::nullopt, wanted.adaptive, unchanged, unused);
  if (attached(name)) {
    // A limiter left enforcing (a restart after --keep-attached): keep its buckets. One the
    // caller opened (and holds the writer lock of) stays where it is until it is held.
    std::optional<XdpLimiter> own;
    XdpLimiter* limiter = opened;
    if (!limiter) {
      auto found = XdpLimiter::open(name);
      if (!found) return found.error();
      limiter = &own.emplace(std::move(*found));
    }
    // before the reload: a replace landing after it is then seen as one, and given the config
    const uint32_t running = limiter->runningProgramId();
    if (Status s = limiter->reload(options); !s)
      return Error::failure(name + ": " + s.error().message);
    logInfo("adopted the limiter already attached to " + name + " (" +
            counted(options.rules.size(), "rule", "rules") + "; its state is kept)" + why);
    logNextProgram(name, *limiter);
    hold(name, std::move(*limiter), true, std::move(adaptive));
    held_.at(name).applied = wanted;
    if (running) held_.at(name).program_id = running;
    return okStatus();
  }
  auto report = XdpLimiter::attach(options);
  if (!report) return Error::failure(name + ": " + report.error().message);
  for (const std::string& warning : report->warnings) logWarning(name + ": " + warning);
  auto limiter = XdpLimiter::open(name);
  if (!limiter) return limiter.error();
  // what the attach wrote and loaded, not what is there now: a reload or replace by hand
  // since then is told apart from the daemon's own
  limiter->sawWriteGeneration(report->write_generation);
  logInfo("attached to " + name + " (" + counted(options.rules.size(), "rule", "rules") +
          (report->prog_array_slot.empty() ? "" : "; in " + report->prog_array_slot) + ")" + why);
  hold(name, std::move(*limiter), false, std::move(adaptive));
  held_.at(name).applied = wanted;
  if (report->program_id) held_.at(name).program_id = report->program_id;
  return okStatus();
}

void HeldInterfaces::relinkSevered() {
  for (auto& [name, held] : held_) {
    if (XdpLimiter::hookLink(name) != XdpLimiter::HookLink::kSevered) {
      severed_.erase(name);
      continue;
    }
    std::string& last = severed_[name];
    if (!interfaceIndex(name)) {
      const std::string gone = name +
                               " was deleted: its limiter runs nowhere until it appears "
                               "again, then it is attached again with its state";
      if (last != gone) logWarning(gone);
      last = gone;
      continue;
    }
    auto report = XdpLimiter::relink(name, held.applied.options.mode);
    if (!report) {
      if (last != report.error().message) {
        logError(name + ": " + report.error().message + " (tried again every second)");
      }
      last = report.error().message;
      continue;
    }
    for (const std::string& warning : report->warnings) logWarning(name + ": " + warning);
    severed_.erase(name);
  }
}

bool HeldInterfaces::followFailedAgain(const std::string& name, const std::string& message) {
  auto& [last, seen] = follow_failures_[name];
  if (last != message) {
    last = message;
    seen = 0;
  }
  return ++seen == 2;
}

void HeldInterfaces::followReattached(bool apply_config) {
  std::erase_if(follow_failures_, [&](const auto& f) { return !held_.contains(f.first); });
  std::erase_if(unapplied_, [&](const std::string& name) { return !held_.contains(name); });
  std::erase_if(unopened_, [&](const std::string& name) { return !held_.contains(name); });
  std::erase_if(rewritten_, [&](const std::string& name) { return !held_.contains(name); });
  std::erase_if(foreign_, [&](const std::string& name) { return !held_.contains(name); });
  // the tick never waits for another command; a reload does, as an attach of its would
  if (!followUnderAttachLock(apply_config ? std::chrono::milliseconds(0) : AttachLock::kWait)) {
    return;
  }
  if (!apply_config) return;
  for (const std::string& name : std::vector<std::string>(unapplied_.begin(), unapplied_.end())) {
    if (!foreign_.contains(name)) tryApplyFollowed(name);  // applied once floodgate's is back
  }
}

bool HeldInterfaces::followUnderAttachLock(std::chrono::milliseconds wait) {
  // An attach, replace or detach by hand holds the attach lock from its first look at the
  // pins to its last pin or program swap; what is seen meanwhile is half done (a replace's
  // rules written and counted, its program not swapped yet; a detach's pins half gone). The
  // look waits for its next turn then. One that cannot take the lock at all (no
  // /run/floodgate) looks without it.
  const auto asked = std::chrono::steady_clock::now();
  auto quiet = AttachLock::acquireWithin(wait);
  const auto now = std::chrono::steady_clock::now();
  if (quiet && !*quiet) {
    if (!attach_lock_busy_) {
      attach_lock_busy_ = true;
      attach_lock_busy_since_ = asked;
    }
    if (!attach_lock_busy_said_ && now - attach_lock_busy_since_ >= kAttachLockBusyTold) {
      attach_lock_busy_said_ = true;
      logWarning(std::string("another floodgate has held the attach lock (") + AttachLock::kPath +
                 ") for " + std::to_string(kAttachLockBusyTold.count()) +
                 " s: limiters replaced, reloaded or attached again by hand are not looked at "
                 "until it is free");
    }
    return false;
  }
  if (attach_lock_busy_said_) logInfo("the attach lock is free again: limiters are looked at");
  attach_lock_busy_ = attach_lock_busy_said_ = false;
  std::vector<std::string> replaced;
  for (auto& [name, held] : held_) {
    if (!held.limiter.holdsPinned() && attached(name)) {
      replaced.push_back(name);
      continue;
    }
    unopened_.erase(name);
    if (!unapplied_.contains(name)) follow_failures_.erase(name);  // "twice running" means that
    // detached by hand, or being detached (its pins go one by one): reported as such
    if (!attached(name) || !held.limiter.holdsPinned()) continue;
    const uint32_t running = held.limiter.runningProgramId();
    // A program that does not use the maps (put on the link outside floodgate, `bpftool link
    // update`): nothing limits the interface; said, and nothing applied to maps none reads.
    const std::optional<bool> uses_maps =
        running ? held.limiter.programUsesMaps(running) : std::optional<bool>(true);
    // the kernel not saying (the maps of a program unreadable without CAP_SYS_ADMIN, or a
    // read failing) changes nothing: one reported stays reported until it is seen to be gone
    if (!uses_maps && foreign_.contains(name)) continue;
    if (uses_maps == false) {
      if (foreign_.insert(name).second) {
        const auto program = programInfoOfId(running);
        logWarning(name + "'s link runs program " + std::to_string(running) +
                   (program ? " (" + program->name + ")" : "") +
                   ", which does not use its limiter's maps (put there outside floodgate): "
                   "nothing limits it; 'floodgate attach " +
                   name + " --replace' puts floodgate's program back, its state kept");
      }
      continue;
    }
    if (foreign_.erase(name) != 0) {
      logInfo(name + ": a program that uses its limiter's maps runs on its link again");
    }
    // The same maps under another program: a replace by hand, which wrote what it was given.
    if (running && held.program_id && running != held.program_id) {
      if (unapplied_.insert(name).second) {
        logWarning(name +
                   "'s program was replaced outside the daemon (floodgate attach --replace): "
                   "the daemon applies its config to it");
      }
    }
    if (running) held.program_id = running;
    // Written by another process without a new program (a `floodgate reload` by hand, a
    // replace that failed after writing, another daemon of the same pins): said, not undone,
    // so that two writers never take turns; the daemon's next reload of it ends it.
    // A count that cannot be read says neither: what was reported stays, and is not said
    // again when the read works.
    const std::optional<bool> elsewhere = held.limiter.reloadedElsewhere();
    if (unapplied_.contains(name) || elsewhere == false) {
      rewritten_.erase(name);
    } else if (elsewhere == true && rewritten_.insert(name).second) {
      logWarning(name +
                 "'s config was reloaded outside the daemon (a floodgate reload, or a replace "
                 "that failed after writing): it runs that config until the daemon reloads");
    }
  }
  for (const std::string& name : replaced) {
    auto limiter = XdpLimiter::open(name);
    if (!limiter) {
      // logged when seen twice running: a detach by hand removes the pins one by one, and
      // one tick may fall between two of them
      unopened_.insert(name);
      if (followFailedAgain(name, limiter.error().message)) {
        logError(name +
                 " was attached again outside the daemon, and its limiter cannot be "
                 "opened: " +
                 limiter.error().message + " (tried again every second)");
      }
      continue;
    }
    follow_failures_.erase(name);
    unopened_.erase(name);
    HeldInterface& held = held_.at(name);
    WantedInterface wanted = std::move(held.applied);
    std::optional<AdaptiveGovernor> adaptive = std::move(held.adaptive);
    // the daemon's own counts go on (the limiter's start over with its maps)
    const auto events_read = held.events_read;
    const metrics::RunningTotal bans_failed_total = held.bans_failed_total;
    const uint64_t tightened = held.adaptive_tightened, relaxed = held.adaptive_relaxed;
    const uint64_t adapt_next = held.adaptive_next_ns;
    held_.erase(name);
    hold(name, std::move(*limiter), true, std::move(adaptive));
    HeldInterface& now = held_.at(name);
    now.applied = std::move(wanted);
    now.events_read = events_read;
    now.bans_failed_total = bans_failed_total;
    now.adaptive_tightened = tightened;
    now.adaptive_relaxed = relaxed;
    now.adaptive_next_ns = adapt_next;
    unapplied_.insert(name);
    logWarning(name +
               " was attached again outside the daemon: the daemon holds the limiter "
               "attached now, and applies its config to it");
  }
  return true;
}

void HeldInterfaces::tryApplyFollowed(const std::string& name) {
  HeldInterface& held = held_.at(name);
  if (!held.limiter.holdsPinned()) return;  // detached again: followed anew, or reattached
  // never waits for another command's lock (the one that attached it may still write):
  // tried again next second
  auto writing = held.limiter.holdWrites(std::chrono::milliseconds(0));
  if (!writing) {
    if (followFailedAgain(name, writing.error().message)) {
      logWarning(name +
                 ": another command holds the writer lock of the limiter attached "
                 "outside the daemon: its config is applied once it is free");
    }
    return;
  }
  AttachOptions options = held.applied.options;
  std::vector<LogLine> lines;
  std::optional<AdaptiveGovernor> adaptive =
      reconcileAdaptive(held.adaptive, held.applied.adaptive, options, lines);
  // before the reload: a replace landing after it is then seen as one, and given the config
  const uint32_t running = held.limiter.runningProgramId();
  if (Status s = held.limiter.reload(options); !s) {
    if (followFailedAgain(name, s.error().message)) {
      logError(name +
               ": its config cannot be applied to the limiter attached outside the "
               "daemon: " +
               s.error().message + " (tried again every second)");
    }
    return;
  }
  // what the limiter keeps of its own (its table and list sizes, its XDP mode)
  if (auto status = held.limiter.summary(); status) {
    for (const std::string& warning : reloadKeepsWarnings(*status, options)) {
      logWarning(name + ": " + warning);
    }
  }
  held.adaptive = std::move(adaptive);
  if (running) held.program_id = running;
  unapplied_.erase(name);
  rewritten_.erase(name);
  follow_failures_.erase(name);
  logInfo(name + ": its config applied to the limiter attached outside the daemon (" +
          counted(options.rules.size(), "rule", "rules") + ")");
  logNextProgram(name, held.limiter);
  for (const LogLine& line : lines) logInfo(line.text);
}

void HeldInterfaces::attachAppeared() {
  followReattached(true);
  relinkSevered();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const std::string name = it->first;
    if (held_.contains(name)) {  // attached by an apply that failed after it
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

void HeldInterfaces::hold(const std::string& name, XdpLimiter limiter, bool adopted,
                          std::optional<AdaptiveGovernor> adaptive) {
  HeldInterface& held = held_.try_emplace(name, std::move(limiter), adopted).first->second;
  held.adaptive = std::move(adaptive);
  foreign_.erase(name);  // of the limiter held before: this one is looked at afresh
  held.program_id = held.limiter.runningProgramId();
  auto reader = EventReader::open(name);
  if (!reader) {
    logWarning(name + ": its events will not be logged: " + reader.error().message);
    return;
  }
  held.events.emplace(std::move(*reader));
}

std::vector<int> HeldInterfaces::eventFds() const {
  std::vector<int> fds;
  for (const auto& [name, held] : held_) {
    if (held.events) fds.push_back(held.events->pollFd());
  }
  return fds;
}

void HeldInterfaces::pumpEvents(EventLog& log, EventLog::Clock::time_point now,
                                std::vector<LogLine>& lines, std::vector<RuleBan>& rule_bans) {
  for (auto& [name, held] : held_) {
    if (!held.events) continue;
    auto events = held.events->drain();
    if (!events) {
      logWarning(name + ": " + events.error().message);
      continue;
    }
    if (events->empty()) continue;
    auto active = held.limiter.activeRules();
    const std::vector<fg_rule> rules = active ? *active : std::vector<fg_rule>{};
    for (const XdpLimiterEvent& event : *events) {
      if (event.type < FG_EVENT_TYPES) ++held.events_read[event.type];
      log.note(name, event, banStartedBy(event.rule_id, rules), now, lines);
      if (event.type != FG_EVENT_BAN_START || !event.source) continue;
      auto ban = rule_ban_ns_.find(banStartedBy(event.rule_id, rules));
      if (ban != rule_ban_ns_.end()) rule_bans.push_back({*event.source, ban->second});
    }
  }
}

void HeldInterfaces::adapt(uint64_t now_ns, std::vector<LogLine>& lines) {
  for (auto& [name, held] : held_) {
    if (!held.adaptive || now_ns < held.adaptive_next_ns) continue;
    held.adaptive_next_ns = now_ns + held.adaptive->config().interval_ns;
    // a limiter attached or reloaded outside the daemon runs other rules than its config
    if (unapplied_.contains(name) || rewritten_.contains(name) || foreign_.contains(name)) continue;
    auto counters = held.limiter.counters();
    if (!counters) {
      lines.push_back({true, "adaptive: cannot read the counters of " + name + ": " +
                                 counters.error().message});
      continue;
    }
    auto decision = held.adaptive->observe(now_ns, passedOf(*counters, held.adaptive->monitor()));
    if (!decision) continue;
    const AppliedChanges made = applyDecision(held.limiter, *held.adaptive, *decision, lines);
    held.adaptive_tightened += made.tightened;
    held.adaptive_relaxed += made.relaxed;
  }
}

uint64_t HeldInterfaces::nextAdaptNs() const {
  uint64_t next = UINT64_MAX;
  for (const auto& [name, held] : held_) {
    if (held.adaptive) next = std::min(next, held.adaptive_next_ns);
  }
  return next;
}

namespace {

// Reads what merges before `held`'s program now. Returns a line to log when that starts or
// stops (not at each change of its text, which names a failed read's error); the first read
// of a limiter this daemon attached says nothing, as the attach said it.
std::optional<std::string> readMergedPackets(const std::string& name, HeldInterface& held) {
  std::optional<std::string> now = held.limiter.mergedPackets();
  std::optional<std::string> line;
  if (now.has_value() != held.merged_packets.has_value() &&
      (held.merged_packets_read || held.adopted)) {
    line = now ? *now
               : "'" + name +
                     "' meets no merged packets now: nothing on the way merges a flow's "
                     "segments, or the program no longer runs there in generic mode";
  }
  held.merged_packets = std::move(now);
  held.merged_packets_read = true;
  return line;
}

}  // namespace

void HeldInterfaces::housekeep(std::vector<std::string>& warnings) {
  for (auto& [name, held] : held_) {
    if (auto line = readMergedPackets(name, held)) warnings.push_back(*line);
    if (auto swept = held.limiter.sweepExpiredBans(); !swept) {
      warnings.push_back(name + ": cannot sweep expired bans: " + swept.error().message);
    }
    auto rules = held.limiter.ruleCounters();
    if (!rules) continue;
    const uint64_t failed = metrics::bansFailed(*rules);
    uint64_t& seen = held.bans_failed_seen;
    if (failed > seen) {
      warnings.push_back(
          "event=bans_failed interface=" + name + " count=" + std::to_string(failed - seen) +
          " reason=\"rule bans filled the ban table up to the " + std::to_string(FG_BAN_RESERVE) +
          " entries kept for manual bans and escalations\"");
    }
    seen = failed;
  }
}

HeldInterfaces::Banned HeldInterfaces::banEverywhere(const Cidr& address, uint64_t ban_ns,
                                                     BanOrigin origin, uint32_t fleet_room) {
  Banned out;
  for (auto& [name, held] : held_) {
    Status s = okStatus();
    if (origin == BanOrigin::kFleet && !held.limiter.fleetBanHasRoom(address, fleet_room)) {
      ++out.no_room;
      s = Error::failure("its ban table holds fleet.bans.max_entries (" +
                         std::to_string(fleet_room) +
                         ") fleet bans of the family, or is full up to the entries kept for "
                         "manual bans and escalations: the rest is kept for this host's own bans");
    } else {
      s = held.limiter.banAdd(address, ban_ns, BanUpdate::kExtend, origin);
    }
    if (!s) {
      if (auto held_back = held.ban_errors.admit(LogThrottle::Clock::now())) {
        logError("could not ban " + address.toString() + " on " + name + ": " + s.error().message +
                 heldBackNote(*held_back));
      }
    } else {
      ++out.on;
    }
  }
  return out;
}

bool HeldInterfaces::allowListedAnywhere(const Cidr& address) const {
  for (const auto& [name, held] : held_) {
    if (held.limiter.allowListed(address)) return true;
  }
  return false;
}

HeldInterfaces::Lifted HeldInterfaces::liftEverywhere(const Cidr& address, uint64_t age_ns) {
  Lifted out;
  for (auto& [name, held] : held_) {
    Result<bool> removed = held.limiter.banRemoveStartedBefore(address, age_ns);
    if (!removed) {
      if (auto held_back = held.lift_errors.admit(LogThrottle::Clock::now())) {
        logError("could not lift the ban of " + address.toString() + " on " + name + ": " +
                 removed.error().message + heldBackNote(*held_back));
      }
      continue;
    }
    ++out.answered;
    out.lifted += *removed;
  }
  return out;
}

void HeldInterfaces::closeEvents() {
  for (auto& [name, held] : held_) held.events.reset();
}

void HeldInterfaces::release(bool keep_attached) {
  for (const auto& [name, held] : held_) {
    if (keep_attached) {
      logInfo("leaving " + name + " attached and enforcing (--keep-attached)");
      continue;
    }
    detachLogged(name, "");
  }
  held_.clear();
}

void HeldInterfaces::releaseAfterFailedStart() {
  for (const auto& [name, held] : held_) {
    if (held.adopted) continue;
    if (auto report = XdpLimiter::detach(name); !report) {
      logError("could not detach " + name + ": " + report.error().message);
    }
  }
  closeEvents();
  held_.clear();
}

void HeldInterfaces::collect(metrics::Snapshot& snapshot) {
  for (const std::string& name : configured_) {
    // up: its limiter runs on it, and runs this config (not one attached outside the daemon)
    snapshot.configured.push_back(
        {name, interfaceIndex(name).ok() && enforcing(name) && !unapplied_.contains(name) &&
                   !rewritten_.contains(name) && !foreign_.contains(name) &&
                   !unopened_.contains(name) && !attach_failures_.contains(name)});
  }
  for (auto& [name, held] : held_) {
    auto one = metrics::collect(held.limiter, &held.sample_cursor);
    if (one) {
      if (!held.merged_packets_read) {
        if (auto line = readMergedPackets(name, held)) logWarning(*line);
      }
      one->merged_packets = held.merged_packets.has_value();
      one->events = held.events_read;
      one->adaptive_tightened = held.adaptive_tightened;
      one->adaptive_relaxed = held.adaptive_relaxed;
      one->bans_failed = held.bans_failed_total.read(metrics::bansFailed(one->rules));
      snapshot.interfaces.push_back(std::move(*one));
    } else if (auto held_back = held.metrics_errors.admit(LogThrottle::Clock::now())) {
      logWarning("metrics of " + name + " unavailable: " + one.error().message +
                 heldBackNote(*held_back));
    }
  }
}

std::vector<std::string> HeldInterfaces::problems() const {
  if (configured_.empty()) return {"no config has been applied"};
  std::vector<std::string> out;
  for (const std::string& name : configured_) {
    if (!interfaceIndex(name)) {
      out.push_back(name + ": no such interface (attached when it appears)");
    } else if (!attached(name)) {
      out.push_back(name + ": no limiter attached");
    } else if (XdpLimiter::hookLink(name) == XdpLimiter::HookLink::kMoved) {
      out.push_back(name +
                    ": its limiter runs on the device it was renamed from ('floodgate "
                    "status " +
                    name + "' says what to do)");
    } else if (unopened_.contains(name)) {
      out.push_back(name +
                    ": attached again outside the daemon, and that limiter cannot be opened "
                    "(see the log)");
    } else if (attach_failures_.contains(name)) {
      out.push_back(name + ": its limiter could not be attached or adopted (see the log)");
    } else if (foreign_.contains(name)) {
      out.push_back(name +
                    ": its link runs a program that does not use its limiter's maps (put "
                    "there outside floodgate), and nothing limits it (see the log)");
    } else if (unapplied_.contains(name)) {
      out.push_back(name +
                    ": attached again or replaced outside the daemon, and its config is not "
                    "applied to that limiter yet (see the log)");
    } else if (!enforcing(name)) {
      out.push_back(name +
                    ": its limiter was cut off it when the interface was deleted "
                    "(being attached again: see the log)");
    } else if (rewritten_.contains(name)) {
      out.push_back(name +
                    ": its config was reloaded outside the daemon, and it runs that one until "
                    "the daemon reloads (see the log)");
    }
  }
  return out;
}

}  // namespace floodgate::daemon
