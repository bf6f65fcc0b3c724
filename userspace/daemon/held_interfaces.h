// SPDX-License-Identifier: MIT
// HeldInterfaces: the limiters the daemon holds, one HeldInterface each, and the listed
// interfaces it waits for. It attaches, adopts, reloads and detaches them to match a
// config, reads their events, sweeps their bans and reads their metrics. Not thread-safe:
// DaemonState calls it under its mutex.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/adaptive_config.h"
#include "controller/event_reader.h"
#include "controller/xdp_limiter.h"
#include "daemon/adaptive_governor.h"
#include "daemon/event_log.h"
#include "daemon/log_throttle.h"
#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"
#include "metrics/exposition.h"
#include "metrics/running_total.h"

namespace floodgate::daemon {

// One interface the daemon holds: its limiter and what the daemon keeps of it.
// What a config asks of one interface.
struct WantedInterface {
  AttachOptions options;
  std::optional<config::AdaptiveConfig> adaptive;
};

struct HeldInterface {
  HeldInterface(XdpLimiter held, bool was_adopted)
      : limiter(std::move(held)), adopted(was_adopted) {}

  XdpLimiter limiter;
  std::optional<EventReader> events;  // none: its events are not logged
  uint32_t sample_cursor = 0;         // where the next metrics sample of sources starts
  std::array<uint64_t, FG_EVENT_TYPES> events_read{};
  uint64_t bans_failed_seen = 0;  // rule bans that found the ban table full, at the last look
  metrics::RunningTotal bans_failed_total;  // floodgate_bans_failed_total
  bool adopted = false;     // found attached and enforcing, not attached by this run
  WantedInterface applied;  // the config it runs: where a reload that fails part way goes back
  // The program that ran with its maps when the daemon last held it or applied its config to
  // it: another one is a replace by hand (`attach --replace`), which wrote rules of its own.
  uint32_t program_id = 0;
  std::optional<AdaptiveGovernor> adaptive;  // none: nothing moves the limits but the config
  uint64_t adaptive_next_ns = 0;             // when the load is read next (steady clock)
  uint64_t adaptive_tightened = 0;           // rule changes made, for floodgate_events_total
  uint64_t adaptive_relaxed = 0;
  // Bans and lifts the fleet or the services ask for that fail (a full table, a locked
  // one): logged at most once per interval each, as an attacker can drive them at any rate.
  LogThrottle ban_errors;
  LogThrottle lift_errors;     // apart, so failing lifts never hide a failing ban
  LogThrottle metrics_errors;  // a failing collect, asked at every scrape
  // What merges a flow's segments before the program (XdpLimiter::mergedPackets), read at
  // housekeeping rather than at each scrape: it dumps the links and asks each device on the
  // way for its features, under the lock scrapes and events share. Logged when it starts or
  // stops.
  std::optional<std::string> merged_packets;
  bool merged_packets_read = false;
};

class HeldInterfaces {
 public:
  // Brings the interfaces in line with `wanted` (every one's options already valid):
  // reloads the ones held, attaches or adopts the others, waits for those that do not exist
  // (logged once), and then detaches those no longer listed. A config that an attached
  // limiter cannot take, a new interface that cannot be attached, or another writer holding
  // the lock of one to reload or adopt (every one is taken first) changes none; a failure past
  // those (the kernel refusing a map write) puts the interfaces reloaded before it back on the
  // config they ran, detaches those it attached, and detaches none it was to let go.
  // An interface's adaptive state is kept or started over as reconcileAdaptive() says.
  Status apply(const std::vector<WantedInterface>& wanted);
  // Attaches the listed interfaces that did not exist and now do, and attaches again those
  // held whose limiter was cut off them (deleted and made again: XdpLimiter::hookLink), their
  // state kept; holds the limiter another command attached in place of a held one
  // (followReattached). A failure is logged once per distinct message and tried again next
  // time.
  void attachAppeared();
  // Detaches every one held (or, with keep_attached, lets go of them enforcing).
  void release(bool keep_attached);
  // After a failed start: detaches what this run attached, leaves what it adopted.
  void releaseAfterFailedStart();
  // Stops reading events (before the limiters are let go).
  void closeEvents();

  std::vector<int> eventFds() const;
  // A ban a rule started (an FG_EVENT_BAN_START event read): the source and how long.
  struct RuleBan {
    Cidr source;
    uint64_t ban_ns = 0;
  };
  // Reads every waiting event, counts it and notes it in `log`; the rule bans among them
  // are added to `rule_bans`.
  void pumpEvents(EventLog& log, EventLog::Clock::time_point now, std::vector<LogLine>& lines,
                  std::vector<RuleBan>& rule_bans);
  // Feeds each adaptive interface whose interval is over (`now_ns` on the steady clock) its
  // passed load, and applies what its governor decides; the lines say what changed.
  void adapt(uint64_t now_ns, std::vector<LogLine>& lines);
  // When adapt() has work next; UINT64_MAX when no interface is adaptive.
  uint64_t nextAdaptNs() const;
  // Deletes the bans that are over; a warning when rule bans found the ban table full.
  void housekeep(std::vector<std::string>& warnings);
  // Bans `address` for `ban_ns` on every one held (extending, never shortening, a ban
  // running), as started by `origin`: on how many it was made, and, for a fleet ban, on how
  // many it was not for want of room (`fleet_room` fleet bans held already; logged as a
  // failure is).
  struct Banned {
    size_t on = 0;
    size_t no_room = 0;
  };
  Banned banEverywhere(const Cidr& address, uint64_t ban_ns, BanOrigin origin,
                       uint32_t fleet_room = 0);
  // Lifts the ban of exactly `address` on every one held, whoever started it (what `ban del`
  // does on one), if it started at least `age_ns` ago (0: whenever): how many answered (a
  // failure is logged), and on how many a ban was lifted.
  struct Lifted {
    size_t answered = 0;
    size_t lifted = 0;
  };
  Lifted liftEverywhere(const Cidr& address, uint64_t age_ns = 0);
  bool empty() const { return held_.empty(); }
  // Whether the allow list of any one held holds a prefix that overlaps `address`: the
  // config's, or one `floodgate allow add` put there since.
  bool allowListedAnywhere(const Cidr& address) const;

  // The configured interfaces, up or not, and the metrics of every one held.
  void collect(metrics::Snapshot& snapshot);
  // One line per configured interface that does not exist or has no limiter attached.
  std::vector<std::string> problems() const;

 private:
  // Attaches again the held limiters cut off their interfaces (attachAppeared).
  void relinkSevered();
  // Holds, in place of the one held, the limiter another command attached to a held
  // interface after detaching it (XdpLimiter::holdsPinned): else the daemon would count, ban
  // and reload through maps no program runs with. With `apply_config`, applies the config
  // the daemon runs to each such limiter not yet given it (when its writer lock is free, so
  // the daemon's tick never waits for another command); until then problems() names it.
  void followReattached(bool apply_config);
  // followReattached's look at each one held, and its hold of those attached again, under
  // the attach lock, waiting up to `wait` for it: false (nothing looked at) while another
  // command attaches, replaces or detaches; said once it has lasted kAttachLockBusyTold.
  bool followUnderAttachLock(std::chrono::milliseconds wait);
  // Applies the config held for `name` to the limiter followed there, if its writer lock is
  // free now; a failure seen twice running is logged once.
  void tryApplyFollowed(const std::string& name);
  // Whether `message`, a failure to follow `name`, is seen the second time running (logged
  // then, once).
  bool followFailedAgain(const std::string& name, const std::string& message);
  // Adopts the limiter pinned for options.interface (`opened`, if the caller opened it
  // already), or attaches a new one, and holds it. `why` ends the log line.
  Status attachOrAdopt(const WantedInterface& wanted, const std::string& why,
                       XdpLimiter* opened = nullptr);
  void hold(const std::string& name, XdpLimiter limiter, bool adopted,
            std::optional<AdaptiveGovernor> adaptive);

  std::map<std::string, HeldInterface> held_;
  std::vector<std::string> configured_;
  // How long the bans of each banning rule last, by rule name (the config's `on_exceed`).
  std::map<std::string, uint64_t> rule_ban_ns_;
  // Listed interfaces that did not exist when the config was applied, with what to attach
  // when they appear, and the last attach failure logged for each.
  std::map<std::string, WantedInterface> waiting_;
  std::map<std::string, std::string> attach_failures_;
  // Held interfaces whose limiter is cut off them, with the last thing logged of each (that
  // it is gone, or the last failure to attach it again).
  std::map<std::string, std::string> severed_;
  // Held interfaces attached again outside the daemon: the last failure to follow each, and
  // how many times running it was seen; and those whose new limiter does not run the
  // daemon's config yet.
  std::map<std::string, std::pair<std::string, int>> follow_failures_;
  std::set<std::string> unapplied_;
  // Held interfaces attached again outside the daemon whose new limiter cannot be opened.
  std::set<std::string> unopened_;
  // Held interfaces whose config another process reloaded (a `floodgate reload` by hand, a
  // replace that failed after writing, another daemon): reported, not undone, so that two
  // writers never take turns; the daemon's next reload of it ends this.
  std::set<std::string> rewritten_;
  // Held interfaces whose link runs a program that does not use the held maps (put there
  // outside floodgate): nothing limits them; reported until a floodgate program is back.
  std::set<std::string> foreign_;
  // Since when the look at the held limiters has found the attach lock taken, and whether
  // that was said (once it lasted kAttachLockBusyTold).
  static constexpr std::chrono::seconds kAttachLockBusyTold{10};
  bool attach_lock_busy_ = false;
  bool attach_lock_busy_said_ = false;
  std::chrono::steady_clock::time_point attach_lock_busy_since_;
};

}  // namespace floodgate::daemon
