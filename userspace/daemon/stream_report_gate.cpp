// SPDX-License-Identifier: MIT
// StreamReportGate: a stream entry checked and parsed into the daemon's report.
#include "daemon/stream_report_gate.h"

#include <algorithm>

#include "floodgate/common/text.h"

namespace floodgate::daemon {

ReceivedReport StreamReportGate::check(const std::string& id,
                                       const Result<http::StreamReport>& entry, int64_t now_ms) {
  ReceivedReport received;
  // the reporter field is not trusted until the signature is checked: keep it printable
  received.sender =
      "redis entry " + printable(id, 40) + (entry ? " from " + printable(entry->reporter, 80) : "");
  if (!entry) {
    received.report = entry.error();
    return received;
  }
  const http::StreamReport& report = *entry;
  const auto lookback_ms = static_cast<int64_t>(lookback_ns_ / 1'000'000);
  Status checked = http::checkStreamReport(secret_, report, now_ms, lookback_ms);
  // Remembered for as long as a copy could pass the time check, a report dated ahead counted
  // from a moment after it was read (ReplayMemory::forgetAt): a copy of one forgotten to make
  // room bans no longer than its signed time plus the ban time.
  const int64_t forget_at = ReplayMemory::forgetAt(report.time_ms, now_ms, lookback_ms);
  if (checked && seen_.remembers(report.mac)) {
    checked = Error::usage("the same report was read before (a copy added again)");
  } else if (checked && seen_.pastDropped(forget_at)) {
    checked = Error::usage("signed no later than a report forgotten to keep the " +
                           std::to_string(kMaxRemembered) +
                           " most recent ones: it may be a copy added again");
  }
  if (!checked) {
    received.unauthorised = true;
    received.report = checked.error();
    return received;
  }
  received.report = parseReport(report.line);
  received.signed_ms = report.time_ms;
  // the quota counts a host, not each of its processes (a restart or a new worker is a new
  // PID); a name of its own making, kept apart from the socket's ("uid 33"), so a stream
  // reporter naming itself "uid 33:1" does not spend the quota of the local www-data
  const std::string& reporter = report.reporter;
  received.reporter = "stream " + reporter.substr(0, std::min<size_t>(reporter.rfind(':'), 80));
  // Just made, it is no older than clocks agree, and the ban is the configured one. Older,
  // it was read from the stream's past.
  if (now_ms - report.time_ms >= ReplayMemory::kClockAgreementMs) {
    received.age_ns = static_cast<uint64_t>(now_ms - report.time_ms) * 1'000'000;
  }
  // What does not parse becomes nothing, a copy of it too, whatever the config. A report the
  // guard refuses today is remembered all the same: the guard follows the config, and a copy
  // read after its allow list shrank would otherwise ban what the fleet's services never
  // meant to (a holder of the secret adding such reports takes room, as with any report).
  if (received.report) seen_.remember(report.mac, forget_at, now_ms);
  return received;
}

}  // namespace floodgate::daemon
