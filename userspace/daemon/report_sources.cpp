// SPDX-License-Identifier: MIT
// ReportSources: the report socket and the stream reader, kept in line with http.escalate.
#include "daemon/report_sources.h"

#include "daemon/log.h"
#include "floodgate/fleet/report_stream.h"

namespace floodgate::daemon {

void ReportSources::sync(const http::HttpConfig* http, const ReporterAccess& access) {
  if (access.socket_gid != socket_gid_) socket_.reset();  // bound again below, in its new group
  socket_gid_ = access.socket_gid;
  syncSocket(http ? http->escalate : http::EscalateConfig{}, access);
  syncStream(http);
}

void ReportSources::syncStream(const http::HttpConfig* http) {
  if (!http || !http->escalate.enabled || http->escalate.redis_stream.empty()) {
    if (stream_) {
      logInfo("no longer taking offender reports from redis stream " + stream_->source().stream);
    }
    retireStreamReader();
    return;
  }
  ReportStreamSource source{http::reportClientOptions(http->store), http->escalate.redis_stream,
                            http->escalate.secret, http->escalate.ban_ns};
  if (stream_ && stream_->source() == source) return;
  retireStreamReader();
  auto reader = StreamReportReader::start(std::move(source));
  if (!reader) {
    logError("offender reports from redis are off: " + reader.error().message);
    return;
  }
  stream_ = std::move(*reader);
}

void ReportSources::retireStreamReader() {
  if (!stream_) return;
  stream_->stop();
  retired_readers_.push_back(std::move(stream_));
}

void ReportSources::syncSocket(const http::EscalateConfig& escalate, const ReporterAccess& access) {
  if (!escalate.enabled) {
    if (socket_) logInfo("no longer taking offender reports on " + socket_->path());
    socket_.reset();
    return;
  }
  if (socket_ && socket_->path() == escalate.socket) return;
  socket_.reset();
  auto listener = ReportListener::bind(escalate.socket, access.socket_gid);
  if (!listener) {
    // the limiter itself is fine: say so, keep enforcing, and try again on the next reload
    logError("offender reports are off: " + listener.error().message);
    return;
  }
  logInfo("taking offender reports on " + escalate.socket + " (mode 0660, group " +
          (escalate.socket_group.empty() ? std::string("root") : escalate.socket_group) +
          "; from root" +
          (access.users.empty() && access.groups.empty()
               ? std::string(" only")
               : std::string(" and http.escalate's reporters")) +
          ")");
  socket_.emplace(std::move(*listener));
}

std::vector<int> ReportSources::fds(bool stream) const {
  std::vector<int> fds;
  if (socket_) fds.push_back(socket_->fd());
  if (stream_ && stream) fds.push_back(stream_->fd());
  return fds;
}

std::vector<ReceivedReport> ReportSources::drain(size_t max_each, bool stream) {
  std::vector<ReceivedReport> out;
  if (socket_) out = socket_->drain(max_each);
  if (stream_ && stream) {
    for (ReceivedReport& received : stream_->drain(max_each)) {
      out.push_back(std::move(received));
    }
  }
  std::erase_if(retired_readers_, [](const auto& reader) { return reader->stopped(); });
  return out;
}

void ReportSources::close() {
  socket_.reset();
  stream_.reset();
  retired_readers_.clear();
}

}  // namespace floodgate::daemon
