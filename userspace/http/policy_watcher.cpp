// SPDX-License-Identifier: MIT
// Applying published documents, and the file watcher's thread.
#include "http/policy_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "http/policy_document.h"

namespace floodgate::http {

namespace {

// How often the file is looked at when no event came.
constexpr int kRecheckMs = 1000;

// Diagnostics are one per line; a log entry is one line.
std::string oneLine(std::string text) {
  for (size_t at; (at = text.find('\n')) != std::string::npos;) text.replace(at, 1, "; ");
  return text;
}

}  // namespace

Result<std::shared_ptr<LiveLimiter>> makeLiveLimiter(const std::string& text,
                                                     const std::string& source,
                                                     std::shared_ptr<const Clock> clock) {
  auto published = parsePolicyDocument(text, source);
  if (!published) return published.error();
  auto limiter = Limiter::create(std::move(published->config), clock);
  if (!limiter) return Error::failure(source + ": " + limiter.error().message);
  return std::make_shared<LiveLimiter>(std::shared_ptr<Limiter>(std::move(*limiter)),
                                       published->version, std::move(clock));
}

void applyPolicyDocument(LiveLimiter& live, const std::string& text, const std::string& source,
                         const PolicyLog& log) {
  auto published = parsePolicyDocument(text, source);
  if (!published) {
    live.refuse(published.error().message);
    log("floodgate: refused the policies published at " + source + ", keeping version " +
        live.version() + ": " + oneLine(published.error().message));
    return;
  }
  if (published->version == live.version()) return;
  const size_t policies = published->config.policies.size();
  if (Status s = live.update(std::move(published->config), published->version); !s) {
    log("floodgate: refused the policies published at " + source + ", keeping version " +
        live.version() + ": " + oneLine(s.error().message));
    return;
  }
  log("floodgate: now enforcing policies version " + published->version + " from " + source + " (" +
      std::to_string(policies) + " policies)");
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
  struct stat now {};
  if (stat(path_.c_str(), &now) != 0) return;  // not (yet) there: keep the current set
  if (now.st_ino == seen_.st_ino && now.st_dev == seen_.st_dev && now.st_size == seen_.st_size &&
      now.st_mtim.tv_sec == seen_.st_mtim.tv_sec && now.st_mtim.tv_nsec == seen_.st_mtim.tv_nsec) {
    return;
  }
  seen_ = now;
  std::ifstream in(path_);
  std::stringstream text;
  text << in.rdbuf();
  applyPolicyDocument(*live_, text.str(), path_, log_);
}

}  // namespace floodgate::http
