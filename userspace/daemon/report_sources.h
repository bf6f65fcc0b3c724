// SPDX-License-Identifier: MIT
// ReportSources: where offender reports come from (http.escalate): the Unix socket
// services on this host write to, and the fleet's Redis stream. It binds, moves or closes
// the one and starts, restarts or stops the reader of the other to match a config, and
// hands out what both received. Not thread-safe: DaemonState calls it under its mutex.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "daemon/escalation_guard.h"
#include "daemon/report_listener.h"
#include "daemon/stream_report_reader.h"
#include "floodgate/core/policy.h"

namespace floodgate::daemon {

class ReportSources {
 public:
  // Matches the config's http.escalate (null http: no reports); `access` says the socket's
  // group, and who may report over it for the log line.
  void sync(const http::HttpConfig* http, const ReporterAccess& access);
  // Descriptors that turn readable when reports wait; the stream's only with `stream`.
  std::vector<int> fds(bool stream = true) const;
  // The reports waiting, at most `max_each` from each source (the rest wait); never blocks.
  // Without `stream`, the stream's wait (the fleet's lifts are not read back yet).
  std::vector<ReceivedReport> drain(size_t max_each, bool stream = true);
  // Stops taking reports.
  void close();

 private:
  void syncSocket(const http::EscalateConfig& escalate, const ReporterAccess& access);
  void syncStream(const http::HttpConfig* http);
  void retireStreamReader();

  std::optional<ReportListener> socket_;
  gid_t socket_gid_ = 0;
  std::unique_ptr<StreamReportReader> stream_;
  // readers asked to stop (the config changed), destroyed once their thread has ended, so
  // the poll loop never waits for a Redis call in progress
  std::vector<std::unique_ptr<StreamReportReader>> retired_readers_;
};

}  // namespace floodgate::daemon
