// SPDX-License-Identifier: MIT
// runDaemon: one poll loop over a signalfd and an inotify fd; file changes are debounced.
#include "daemon/daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/config_watch.h"
#include "daemon/daemon_state.h"
#include "daemon/log.h"
#include "daemon/metrics_server.h"
#include "daemon/run_lock.h"
#include "daemon/scrape_server.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {
namespace {

using Clock = std::chrono::steady_clock;
// Editors write a file in several steps; one reload after they settle.
constexpr auto kDebounce = std::chrono::milliseconds(200);
// At most one log line per source and event kind this often.
constexpr auto kEventInterval = std::chrono::seconds(10);
// The longest the loop sleeps, so counted events are reported when their interval ends.
constexpr int kMaxWaitMs = 1000;
// How often expired bans are swept and a full ban table is looked for (and so logged at
// most once per this interval).
constexpr auto kHousekeepingInterval = std::chrono::seconds(10);
// How often a listed interface that does not exist is looked for again (one if_nametoindex
// each), so one that appears is attached within about a second.
constexpr auto kInterfaceCheckInterval = std::chrono::seconds(1);

Result<UniqueFd> blockSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  // Blocked before any thread starts, so every thread inherits the mask and only the
  // signalfd sees them.
  if (int err = pthread_sigmask(SIG_BLOCK, &set, nullptr); err != 0) {
    return Error::failure(std::string("cannot block signals: ") + std::strerror(err));
  }
  UniqueFd fd(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd.valid()) return Error::failure(std::string("signalfd: ") + std::strerror(errno));
  return fd;
}

void reload(DaemonState& state, const std::string& why) {
  logInfo("reloading the config (" + why + ")");
  if (Status s = state.apply(false); !s) logError("reload failed: " + s.error().message);
}

}  // namespace

Status runDaemon(const RunOptions& options) {
  auto lock = RunLock::acquire();  // held to the end: a second daemon changes nothing
  if (!lock) return lock.error();
  auto signals = blockSignals();
  if (!signals) return signals.error();
  auto watch = ConfigWatch::start(options.config_path);
  if (!watch) return watch.error();

  // Bound before the first apply: a port someone else holds fails the start before anything
  // is attached. Bound after it, the failed start would detach again, and every restart of
  // Restart=on-failure too, leaving the host unprotected for as long as the port is held.
  auto listener = ScrapeServer::openListener(options.listen);
  if (!listener) return listener.error();

  DaemonState state(options.config_path);
  if (Status s = state.apply(true); !s) {
    state.releaseAfterFailedStart();
    return s;
  }
  auto server = MetricsServer::start(std::move(*listener), state);
  if (!server) {
    state.releaseAfterFailedStart();
    return server.error();
  }
  // the port bound (the kernel's choice for :0), an IPv6 address in brackets as in a URL
  const bool v6 = options.listen.host.find(':') != std::string::npos;
  logInfo("serving metrics on http://" +
          (v6 ? "[" + options.listen.host + "]" : options.listen.host) + ":" +
          std::to_string((*server)->port()) + "/metrics");

  // A plain flag and time (not std::optional: g++ 12 warns falsely on it here).
  bool reload_pending = false;
  Clock::time_point reload_at{};
  bool running = true;
  EventLog events(kEventInterval);
  Clock::time_point next_housekeeping = Clock::now() + kHousekeepingInterval;
  Clock::time_point next_interface_check = Clock::now() + kInterfaceCheckInterval;
  while (running) {
    int timeout_ms = static_cast<int>(std::clamp<int64_t>(
        std::min<int64_t>(state.untilAdapt().count(), kMaxWaitMs), 0, kMaxWaitMs));
    if (reload_pending) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(reload_at - Clock::now());
      timeout_ms =
          std::min(timeout_ms, static_cast<int>(std::clamp<int64_t>(left.count(), 0, kMaxWaitMs)));
    }
    std::vector<pollfd> fds = {{signals->get(), POLLIN, 0}, {watch->fd(), POLLIN, 0}};
    for (int fd : state.eventFds()) fds.push_back({fd, POLLIN, 0});
    int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) {
      logError(std::string("poll: ") + std::strerror(errno));
      break;
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (read(signals->get(), &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
        if (info.ssi_signo == SIGHUP) {
          reload(state, "SIGHUP");
          reload_pending = false;
        } else {
          logInfo(std::string("stopping on ") + strsignal(static_cast<int>(info.ssi_signo)));
          running = false;
        }
      }
    }
    if (fds[1].revents & POLLIN && watch->drain()) {
      reload_pending = true;
      reload_at = Clock::now() + kDebounce;
    }
    if (running && reload_pending && Clock::now() >= reload_at) {
      reload_pending = false;
      reload(state, options.config_path + " changed");
    }
    state.pumpEvents(events);
    if (running) state.adapt();
    if (Clock::now() >= next_interface_check) {
      state.attachAppeared();
      next_interface_check = Clock::now() + kInterfaceCheckInterval;
    }
    if (Clock::now() >= next_housekeeping) {
      state.housekeep();
      next_housekeeping = Clock::now() + kHousekeepingInterval;
    }
  }
  server->reset();  // no scrape may run while the limiters go
  state.release(options.keep_attached);
  return okStatus();
}

}  // namespace floodgate::daemon
