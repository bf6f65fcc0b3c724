// SPDX-License-Identifier: MIT
// ReportListener: the Unix datagram socket services report abusive client IPs to
// (http.escalate). Who may report is decided by the socket file's permissions (0660: root
// and the socket's group); each report carries its sender's credentials for the log.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/cidr.h"
#include "common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {

struct OffenderReport {
  Cidr address;  // a host address
  int64_t rejections = 0;
  int64_t within_ms = 0;
};

// Parses "offender ADDRESS rejections=N within_ms=N" (a trailing newline is fine); a usage
// error naming what is wrong otherwise.
Result<OffenderReport> parseReport(std::string_view text);

// A report as it arrived, over the socket or through the Redis stream.
struct ReceivedReport {
  Result<OffenderReport> report = Error::usage("empty");
  bool unauthorised = false;  // a stream entry not signed with the fleet's secret
  std::string sender;         // "pid 812 uid 33", or "redis entry ID from HOST:PID"
  uint64_t age_ns = 0;        // how long before it was read it was made (0 under a second)
};

class ReportListener {
 public:
  // Binds `path` (replacing a stale socket file left there), mode 0660.
  static Result<ReportListener> bind(const std::string& path);
  ReportListener() = default;
  ReportListener(ReportListener&& other) noexcept = default;
  ReportListener& operator=(ReportListener&& other) noexcept;
  ~ReportListener();

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }
  // The reports waiting, at most `max` (the rest wait for the next call); never blocks.
  std::vector<ReceivedReport> drain(size_t max);

 private:
  void removeFile();

  UniqueFd fd_;
  std::string path_;
};

}  // namespace floodgate::daemon
