// SPDX-License-Identifier: MIT
// MetricsServer: /metrics and /healthz over cpp-httplib on its own threads.
#pragma once

#include <memory>
#include <thread>

#include "daemon/daemon_state.h"
#include "daemon/listen_address.h"
#include "floodgate/common/result.h"

namespace httplib {
class Server;
}

namespace floodgate::daemon {

class MetricsServer {
 public:
  // Binds at once (so a taken port fails the start) and serves until destroyed.
  // `state` must outlive the server.
  static Result<std::unique_ptr<MetricsServer>> start(const ListenAddress& address,
                                                      DaemonState& state);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

 private:
  MetricsServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace floodgate::daemon
