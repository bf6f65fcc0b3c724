// SPDX-License-Identifier: MIT
// MetricsServer: /metrics and /healthz of the daemon's state, over a ScrapeServer.
#pragma once

#include <memory>

#include "daemon/daemon_state.h"
#include "daemon/scrape_server.h"
#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {

class MetricsServer {
 public:
  // Serves `listener` (ScrapeServer::openListener, bound before anything was attached, so a
  // taken port fails the start with nothing to undo) until destroyed. `state` must outlive
  // the server.
  static Result<std::unique_ptr<MetricsServer>> start(UniqueFd listener, DaemonState& state);
  // The port it listens on (the one the kernel chose, for a port of 0).
  uint16_t port() const { return server_->port(); }

 private:
  explicit MetricsServer(std::unique_ptr<ScrapeServer> server) : server_(std::move(server)) {}
  std::unique_ptr<ScrapeServer> server_;
};

}  // namespace floodgate::daemon
