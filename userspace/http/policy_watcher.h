// SPDX-License-Identifier: MIT
// Following published policies: apply each new version to a LiveLimiter, refuse bad ones;
// and PolicyFileWatcher, which follows a file written by the controller on this host.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/result.h"
#include "http/clock.h"
#include "http/live_limiter.h"

namespace floodgate::http {

// Where a watcher reports what it did: one line per event (the default: stderr).
using PolicyLog = std::function<void(const std::string& line)>;

// A first LiveLimiter from a published document: an error (all its diagnostics) when the
// document is invalid, since there is no earlier set to keep.
Result<std::shared_ptr<LiveLimiter>> makeLiveLimiter(const std::string& text,
                                                     const std::string& source,
                                                     std::shared_ptr<const Clock> clock);

// A document read from `source`: a new version is swapped in; the version running is left
// alone; an invalid document is refused (counted, one line logged) and the set stays.
void applyPolicyDocument(LiveLimiter& live, const std::string& text, const std::string& source,
                         const PolicyLog& log);

// Follows `path` on a thread of its own: inotify on its directory (so the controller's
// rename over the file is seen at once), and a look at the file every second in case an
// event was missed or the directory did not exist yet. Stops when destroyed.
class PolicyFileWatcher {
 public:
  static Result<std::unique_ptr<PolicyFileWatcher>> start(std::string path,
                                                          std::shared_ptr<LiveLimiter> live,
                                                          PolicyLog log = {});
  ~PolicyFileWatcher();
  PolicyFileWatcher(const PolicyFileWatcher&) = delete;
  PolicyFileWatcher& operator=(const PolicyFileWatcher&) = delete;

 private:
  PolicyFileWatcher(std::string path, std::shared_ptr<LiveLimiter> live, PolicyLog log)
      : path_(std::move(path)), live_(std::move(live)), log_(std::move(log)) {}
  void run();
  // Reads and applies the file if it is not the one seen last (inode, size, mtime).
  void check();

  std::string path_;
  std::shared_ptr<LiveLimiter> live_;
  PolicyLog log_;
  int inotify_fd_ = -1;
  int stop_fd_ = -1;  // an eventfd the destructor writes to
  struct stat seen_ {};
  std::thread thread_;
};

}  // namespace floodgate::http
