// SPDX-License-Identifier: MIT
// ReportListener: the Unix datagram socket services report abusive clients to
// (http.escalate). The socket file is mode 0660 in its group from the moment it appears;
// each report carries its sender's credentials, which the daemon checks against
// http.escalate's reporters (escalation_guard.h) before it believes a word.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"
#include "floodgate/report/offender_report.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {

// The report line is the protocol's (floodgate/report/offender_report.h).
using report::OffenderReport;
using report::parseReport;

// A report as it arrived, over the socket or through the Redis stream.
struct ReceivedReport {
  Result<OffenderReport> report = Error::usage("empty");
  bool unauthorised = false;  // a stream entry not signed with the fleet's secret
  std::string sender;         // "pid 812 uid 33", or "redis entry ID from HOST:PID"
  std::string reporter;       // who the ban quota counts: "uid 33", or "stream HOST"
  bool over_socket = false;   // then uid and gid are the sender's, from the kernel
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  uint64_t age_ns = 0;    // how long before it was read it was made (0 under a second)
  int64_t signed_ms = 0;  // read from the stream: when its reporter signed it (its clock, ms)
  // Read back by the stream reader's start from the stream's past: the fleet's controllers
  // that were running applied it when it was made, charged to their per-minute quotas.
  bool replayed = false;
};

class ReportListener {
 public:
  // Binds `path` (replacing a stale socket file left there), mode 0660, group `gid`. The
  // socket is made in a private directory beside `path` and renamed into place, so it is
  // never reachable with the umask's mode or root's group.
  static Result<ReportListener> bind(const std::string& path, gid_t gid = 0);
  ReportListener() = default;
  ReportListener(ReportListener&& other) noexcept = default;
  ReportListener& operator=(ReportListener&& other) noexcept;
  ~ReportListener();

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }
  // The reports waiting, at most `max` (the rest wait for the next call); never blocks.
  std::vector<ReceivedReport> drain(size_t max);

 private:
  // Removes the socket file, if it is still the one this listener made.
  void removeFile();

  UniqueFd fd_;
  std::string path_;
  // The socket file's identity: another run (a second daemon, or a restart's new one) may
  // have renamed its own socket over path_ since, and that one is not ours to remove.
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace floodgate::daemon
