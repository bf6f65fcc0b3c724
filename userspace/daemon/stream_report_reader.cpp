// SPDX-License-Identifier: MIT
// The report reader: a stream entry checked and parsed into the daemon's report.
#include "daemon/stream_report_reader.h"

#include <algorithm>

#include "floodgate/common/text.h"
#include "floodgate/fleet/report_stream.h"

namespace floodgate::daemon {

ReceivedReport StreamReportReader::receive(const TailEntry& entry) {
  const std::string& id = entry.id;
  const int64_t now_ms = entry.now_ms;
  ReceivedReport received;
  auto report = http::streamReportFromFields(entry.fields);
  // the reporter field is not trusted until the signature is checked: keep it printable
  received.sender = "redis entry " + printable(id, 40) +
                    (report ? " from " + printable(report->reporter, 80) : "");
  if (!report) {
    received.report = report.error();
    return received;
  }
  const auto lookback_ms = static_cast<int64_t>(source_.lookback_ns / 1'000'000);
  Status checked = http::checkStreamReport(source_.secret, *report, now_ms, lookback_ms);
  // remembered for as long as a copy could pass the time check
  const int64_t forget_at = report->time_ms + lookback_ms + 2 * http::kReportClockSkewMs;
  if (checked && seen_.remembers(report->mac)) {
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
  received.report = parseReport(report->line);
  // what does not parse becomes nothing, a copy of it too: only reports take room
  if (received.report) seen_.remember(report->mac, forget_at, now_ms);
  // the quota counts a host, not each of its processes (a restart or a new worker is a new
  // PID); a name of its own making, kept apart from the socket's ("uid 33"), so a stream
  // reporter naming itself "uid 33:1" does not spend the quota of the local www-data
  const std::string& reporter = report->reporter;
  received.reporter = "stream " + reporter.substr(0, std::min<size_t>(reporter.rfind(':'), 80));
  // Under a second it is a report just made: hosts' clocks agree no better than that, and
  // the ban is the configured one. Older, it was read from the stream's past.
  if (now_ms - report->time_ms >= 1000) {
    received.age_ns = static_cast<uint64_t>(now_ms - report->time_ms) * 1'000'000;
  }
  return received;
}

bool ReportStreamSource::operator==(const ReportStreamSource& other) const {
  return client.seeds == other.client.seeds && client.cluster == other.client.cluster &&
         client.credentials == other.client.credentials && stream == other.stream &&
         secret == other.secret && lookback_ns == other.lookback_ns;
}

Result<std::unique_ptr<StreamReportReader>> StreamReportReader::start(ReportStreamSource source) {
  auto tail =
      StreamTail::start({source.client, source.stream, source.lookback_ns, "offender reports"});
  if (!tail) return tail.error();
  return std::unique_ptr<StreamReportReader>(
      new StreamReportReader(std::move(source), std::move(*tail)));
}

std::vector<ReceivedReport> StreamReportReader::drain(size_t max) {
  std::vector<ReceivedReport> out;
  for (const TailEntry& entry : tail_->drain(max)) out.push_back(receive(entry));
  return out;
}

}  // namespace floodgate::daemon
