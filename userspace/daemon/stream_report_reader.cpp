// SPDX-License-Identifier: MIT
// The report reader: the stream's entries, through the gate, to the daemon.
#include "daemon/stream_report_reader.h"

#include "floodgate/fleet/report_stream.h"

namespace floodgate::daemon {

bool ReportStreamSource::operator==(const ReportStreamSource& other) const {
  return client.seeds == other.client.seeds && client.cluster == other.client.cluster &&
         client.credentials == other.client.credentials && stream == other.stream &&
         secret == other.secret && lookback_ns == other.lookback_ns;
}

Result<std::unique_ptr<StreamReportReader>> StreamReportReader::start(ReportStreamSource source) {
  // At most the newest entries the services' trimming keeps: whoever can write the stream
  // may add more, and a start's replay is not charged to the live quotas.
  auto tail =
      StreamTail::start({source.client, source.stream, source.lookback_ns, "offender reports",
                         static_cast<size_t>(http::kReportStreamMaxLen)});
  if (!tail) return tail.error();
  return std::unique_ptr<StreamReportReader>(
      new StreamReportReader(std::move(source), std::move(*tail)));
}

std::vector<ReceivedReport> StreamReportReader::drain(size_t max) {
  std::vector<ReceivedReport> out;
  for (const TailEntry& entry : tail_->drain(max)) {
    if (entry.replay_end) {
      replay_over_ = true;
      continue;
    }
    out.push_back(gate_.check(entry.id, http::streamReportFromFields(entry.fields), entry.now_ms));
    // Only the start's own replay: whoever writes the stream can make it go back (read back
    // again) as often as they like, and a holder of the secret add its reports to that.
    out.back().replayed = entry.read_back && !replay_over_;
  }
  return out;
}

}  // namespace floodgate::daemon
