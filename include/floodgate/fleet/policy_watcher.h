// SPDX-License-Identifier: MIT
// Following published policies: apply each new version to a LiveLimiter, refuse bad ones
// (and, from Redis, unsigned, forged and replayed ones); and PolicyFileWatcher, which follows
// a file written by the controller on this host.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "floodgate/common/result.h"
#include "floodgate/core/clock.h"
#include "floodgate/core/live_limiter.h"
#include "floodgate/fleet/policy_document.h"

namespace floodgate::http {

// Where a watcher reports what it did: one line per event (the default: stderr).
using PolicyLog = std::function<void(const std::string& line)>;

// A first LiveLimiter from a published document: an error (all its diagnostics) when the
// document is invalid, since there is no earlier set to keep.
Result<std::shared_ptr<LiveLimiter>> makeLiveLimiter(const std::string& text,
                                                     const std::string& source,
                                                     std::shared_ptr<const Clock> clock);
// The same from a document read from Redis, which must be signed (parseSignedPolicyDocument);
// its serial is the LiveLimiter's first.
Result<std::shared_ptr<LiveLimiter>> makeSignedLiveLimiter(const std::string& text,
                                                           const std::string& source,
                                                           const PolicySigning& signing,
                                                           std::shared_ptr<const Clock> clock);

// Whether a published file is one only root or this service could have written: an error
// saying how to fix it when its group or every user may write it, or another user owns it.
Status checkPolicyFileOwner(const struct stat& file, const std::string& path);
// The text of the published file at `path`, once checkPolicyFileOwner passes on what was
// opened; an error that says what to do otherwise.
Result<std::string> readPolicyFile(const std::string& path);

// A document read from a file at `source`: a new version is swapped in; the version running
// is left alone; an invalid document is refused (counted, one line logged) and the set stays.
void applyPolicyDocument(LiveLimiter& live, const std::string& text, const std::string& source,
                         const PolicyLog& log);
// A document read from Redis: as applyPolicyDocument, and refused too (counted by reason)
// when it is unsigned, not signed by `signing`, or its serial is older than live.serial()
// (or the same with other content). A newer serial of the version in force raises serial().
void applySignedPolicyDocument(LiveLimiter& live, const std::string& text,
                               const std::string& source, const PolicySigning& signing,
                               const PolicyLog& log);

// Follows `path` on a thread of its own: inotify on its directory (so the controller's
// rename over the file is seen at once), and a look at the file every second in case an
// event was missed or the directory did not exist yet. A file that fails
// checkPolicyFileOwner is refused (kUnsafeFile). Stops when destroyed.
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
  // Checks, reads and applies the file if it is not the one seen last (inode, size, mtime).
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
