// SPDX-License-Identifier: MIT
// Applying published documents, and the file watcher's thread.
#include "floodgate/fleet/policy_watcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "floodgate/fleet/policy_document.h"
#include "floodgate/redis/store_factory.h"

namespace floodgate::http {

namespace {

// How often the file is looked at when no event came.
constexpr int kRecheckMs = 1000;

// Diagnostics are one per line; a log entry is one line.
std::string oneLine(std::string text) {
  for (size_t at; (at = text.find('\n')) != std::string::npos;) text.replace(at, 1, "; ");
  return text;
}

void refuse(LiveLimiter& live, PolicyRefusal reason, const std::string& source,
            const std::string& why, const PolicyLog& log) {
  live.refuse(reason, why);
  log("floodgate: refused the policies published at " + source + ", keeping version " +
      live.version() + " (" + policyRefusalName(reason) + "): " + oneLine(why));
}

void apply(LiveLimiter& live, PublishedPolicies published, const std::string& source,
           const PolicyLog& log) {
  const size_t policies = published.config.policies.size();
  const std::string version = published.version;
  if (Status s = live.update(std::move(published.config), version, published.serial); !s) {
    log("floodgate: refused the policies published at " + source + ", keeping version " +
        live.version() + " (invalid): " + oneLine(s.error().message));
    return;
  }
  log("floodgate: now enforcing policies version " + version + " from " + source + " (" +
      std::to_string(policies) + " policies)");
}

Result<std::shared_ptr<LiveLimiter>> makeLiveLimiter(PublishedPolicies published,
                                                     const std::string& source,
                                                     std::shared_ptr<const Clock> clock) {
  useRedisStores();  // published policies may well keep their state in Redis
  auto limiter = Limiter::create(std::move(published.config), clock);
  if (!limiter) return Error::failure(source + ": " + limiter.error().message);
  return std::make_shared<LiveLimiter>(std::shared_ptr<Limiter>(std::move(*limiter)),
                                       published.version, std::move(clock), StoreFactory{},
                                       published.serial);
}

std::string readAll(int fd) {
  std::string text;
  char buf[8192];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR);) {
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace

Result<std::shared_ptr<LiveLimiter>> makeLiveLimiter(const std::string& text,
                                                     const std::string& source,
                                                     std::shared_ptr<const Clock> clock) {
  auto published = parsePolicyDocument(text, source);
  if (!published) return published.error();
  return makeLiveLimiter(std::move(*published), source, std::move(clock));
}

Result<std::shared_ptr<LiveLimiter>> makeSignedLiveLimiter(const std::string& text,
                                                           const std::string& source,
                                                           const PolicySigning& signing,
                                                           std::shared_ptr<const Clock> clock) {
  PolicyRefusal refusal = PolicyRefusal::kInvalid;
  auto published = parseSignedPolicyDocument(text, source, signing, &refusal);
  if (!published) return published.error();
  return makeLiveLimiter(std::move(*published), source, std::move(clock));
}

// A symlink is not followed and a pipe does not block the open: both are refused once the
// descriptor is checked (checkPolicyFileOwner), which is what is then read.
constexpr int kPolicyFileOpenFlags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;

Status checkPolicyFileOwner(const struct stat& file, const std::string& path) {
  if (!S_ISREG(file.st_mode)) {
    return Error::failure(path +
                          " is not a regular file: the controller publishes one (a "
                          "symlink or a pipe there was put by someone else)");
  }
  if ((file.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Error::failure(
        path + " is writable by " + ((file.st_mode & S_IWOTH) != 0 ? "every user" : "its group") +
        ": any of them could hand this service any policies (chmod 644 " + path + ")");
  }
  if (file.st_uid != 0 && file.st_uid != geteuid()) {
    return Error::failure(path + " is owned by uid " + std::to_string(file.st_uid) +
                          ", neither root nor this service (uid " + std::to_string(geteuid()) +
                          "): publish it with floodgate run as root, or chown root " + path);
  }
  return okStatus();
}

Result<std::string> readPolicyFile(const std::string& path) {
  int fd = open(path.c_str(), kPolicyFileOpenFlags);
  if (fd < 0) {
    return Error::failure(path + ": cannot read the published policies: " + std::strerror(errno) +
                          " (run 'floodgate http publish --config FILE' or 'floodgate run' with "
                          "http.publish.file first)");
  }
  struct stat file {};
  Status owner = fstat(fd, &file) == 0 ? checkPolicyFileOwner(file, path)
                                       : Status(Error::failure(path + ": " + std::strerror(errno)));
  std::string text;
  if (owner) text = readAll(fd);
  close(fd);
  if (!owner) return owner.error();
  return text;
}

void applyPolicyDocument(LiveLimiter& live, const std::string& text, const std::string& source,
                         const PolicyLog& log) {
  auto published = parsePolicyDocument(text, source);
  if (!published) {
    refuse(live, PolicyRefusal::kInvalid, source, published.error().message, log);
    return;
  }
  if (published->version == live.version()) return;
  apply(live, std::move(*published), source, log);
}

void applySignedPolicyDocument(LiveLimiter& live, const std::string& text,
                               const std::string& source, const PolicySigning& signing,
                               const PolicyLog& log) {
  PolicyRefusal reason = PolicyRefusal::kInvalid;
  auto published = parseSignedPolicyDocument(text, source, signing, &reason);
  if (!published) {
    refuse(live, reason, source, published.error().message, log);
    return;
  }
  const uint64_t in_force = live.serial();
  // The same serial is the document in force read again (on every message and reconnect);
  // with other content it cannot be one the controller signed after it.
  if (published->serial < in_force ||
      (published->serial == in_force && published->version != live.version())) {
    refuse(live, PolicyRefusal::kStale, source,
           source + ": serial " + std::to_string(published->serial) + " is not newer than serial " +
               std::to_string(in_force) +
               " in force: an older document written back (publish again to replace it)",
           log);
    return;
  }
  if (published->version == live.version()) {
    live.noteSerial(published->serial);
    return;
  }
  apply(live, std::move(*published), source, log);
}

Result<std::unique_ptr<PolicyFileWatcher>> PolicyFileWatcher::start(
    std::string path, std::shared_ptr<LiveLimiter> live, PolicyLog log) {
  if (!log) log = [](const std::string& line) { std::cerr << line << std::endl; };
  std::unique_ptr<PolicyFileWatcher> watcher(
      new PolicyFileWatcher(std::move(path), std::move(live), std::move(log)));
  watcher->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  watcher->inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (watcher->stop_fd_ < 0 || watcher->inotify_fd_ < 0) {
    return Error::failure(std::string("cannot watch the policy file: ") + std::strerror(errno));
  }
  std::filesystem::path dir = std::filesystem::path(watcher->path_).parent_path();
  if (dir.empty()) dir = ".";
  // Missing directory: the once-a-second look still finds the file when it appears.
  inotify_add_watch(watcher->inotify_fd_, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE);
  // seen_ starts empty, so the first look reads the file: a publish between the caller's
  // read and this start is not missed (the version the caller loaded is left alone).
  watcher->thread_ = std::thread([w = watcher.get()] { w->run(); });
  return watcher;
}

PolicyFileWatcher::~PolicyFileWatcher() {
  uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) < 0) {
  }  // cannot fail for an eventfd below its maximum
  if (thread_.joinable()) thread_.join();
  close(stop_fd_);
  close(inotify_fd_);
}

void PolicyFileWatcher::run() {
  while (true) {
    pollfd fds[] = {{stop_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    int n = poll(fds, 2, kRecheckMs);
    if (n < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) return;
    if (fds[1].revents & POLLIN) {
      alignas(inotify_event) char buf[4096];
      while (read(inotify_fd_, buf, sizeof buf) > 0) {
      }  // any event is only a hint: check() compares the file itself
    }
    check();
  }
}

void PolicyFileWatcher::check() {
  // One descriptor for the checks and the read: what is read is the file that was checked.
  int fd = open(path_.c_str(), kPolicyFileOpenFlags);
  if (fd < 0) return;  // not (yet) there: keep the current set
  struct stat now {};
  if (fstat(fd, &now) != 0 ||
      (now.st_ino == seen_.st_ino && now.st_dev == seen_.st_dev && now.st_size == seen_.st_size &&
       now.st_mtim.tv_sec == seen_.st_mtim.tv_sec &&
       now.st_mtim.tv_nsec == seen_.st_mtim.tv_nsec)) {
    close(fd);
    return;
  }
  seen_ = now;
  if (Status owner = checkPolicyFileOwner(now, path_); !owner) {
    close(fd);
    refuse(*live_, PolicyRefusal::kUnsafeFile, path_, owner.error().message, log_);
    return;
  }
  std::string text = readAll(fd);
  close(fd);
  applyPolicyDocument(*live_, text, path_, log_);
}

}  // namespace floodgate::http
