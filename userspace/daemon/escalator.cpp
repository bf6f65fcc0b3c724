// SPDX-License-Identifier: MIT
// Escalator: from a decision to a ban, a count and a log line.
#include "daemon/escalator.h"

#include "daemon/log.h"
#include "floodgate/common/text.h"
#include "floodgate/common/units.h"

namespace floodgate::daemon {

void Escalator::forgetEnded(Clock::time_point now) { memory_.forgetEnded(now); }

void Escalator::refuse(metrics::EscalationResult result, const ReceivedReport& received,
                       const std::string& why, Clock::time_point now) {
  ++counts_[result];
  // a flood of one kind is one line per 10 s; the counter has every one
  auto held_back = refusal_logs_[result].admit(now);
  if (!held_back) return;
  logWarning(std::string("event=escalation_refused result=") +
             metrics::kEscalationResultNames[result] + " reporter=\"" + printable(received.sender) +
             "\" why=\"" + printable(why) + "\"" + heldBackNote(*held_back));
}

uint64_t Escalator::handle(const ReceivedReport& received, HeldInterfaces& interfaces,
                           Clock::time_point now) {
  const EscalationDecision decision =
      decideEscalation(received, config_, own_addresses_.get(now), memory_, now);
  if (decision.result != metrics::kEscalationBanned) {
    if (decision.why.empty()) {
      ++counts_[decision.result];
    } else {
      refuse(decision.result, received, decision.why, now);
    }
    return 0;
  }
  // The report costs its reporter one ban of the quota before the limiters' allow lists are
  // read: reading a list costs the daemon (every entry, for a prefix), and a reporter that
  // names an allow-listed client again and again must not make it read them without end.
  // The library reports a client once a ban time, so a true report rarely pays for nothing.
  chargeBan(received, config_, memory_, now);
  // The config's allow list is in the decision; one `floodgate allow add` put on a limiter
  // since is not: its ban would drop nothing here, and the fleet's hosts would drop a source
  // this host's operator trusts.
  if (interfaces.allowListedAnywhere(received.report->address)) {
    ++counts_[metrics::kEscalationAllowListed];
    return 0;
  }
  const Cidr& address = received.report->address;
  const std::string text = address.toString();
  // An escalation never shortens a ban already running (a manual one, or a longer one
  // from another report): it only extends. Not banned anywhere (a table full, a writer
  // holding the lock; each interface's failure is logged): counted, and the next report of
  // it tries again instead of being taken for a repeat.
  if (interfaces.banEverywhere(address, decision.ban_ns, BanOrigin::kEscalation).on == 0 &&
      !interfaces.empty()) {
    ++counts_[metrics::kEscalationFailed];
    return 0;
  }
  ++counts_[metrics::kEscalationBanned];
  memory_.banned_until[text] = now + std::chrono::nanoseconds(decision.ban_ns);
  logWarning("event=escalated source=" + text + " ban=" + formatDuration(decision.ban_ns) +
             " rejections=" + std::to_string(received.report->rejections) +
             " within_ms=" + std::to_string(received.report->within_ms) + " reporter=\"" +
             printable(received.sender) + "\"");
  return decision.ban_ns;
}

}  // namespace floodgate::daemon
