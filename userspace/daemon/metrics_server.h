// SPDX-License-Identifier: MIT
// MetricsServer: /metrics and /healthz of the daemon's state, over a ScrapeServer.
#pragma once

#include <memory>

#include "daemon/daemon_state.h"
#include "daemon/listen_address.h"
#include "daemon/scrape_server.h"
#include "floodgate/common/result.h"

namespace floodgate::daemon {

class MetricsServer {
 public:
  // Binds at once (so a taken port fails the start) and serves until destroyed.
  // `state` must outlive the server.
  static Result<std::unique_ptr<MetricsServer>> start(const ListenAddress& address,
                                                      DaemonState& state);
  // The port it listens on (the one the kernel chose, for a port of 0).
  uint16_t port() const { return server_->port(); }

 private:
  explicit MetricsServer(std::unique_ptr<ScrapeServer> server) : server_(std::move(server)) {}
  std::unique_ptr<ScrapeServer> server_;
};

}  // namespace floodgate::daemon
