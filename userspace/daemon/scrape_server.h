// SPDX-License-Identifier: MIT
// ScrapeServer: answers GET of a few fixed paths (/metrics, /healthz) on one thread that
// polls every connection, so no client can hold it up: each connection has one deadline for
// its whole request and answer, a request head has a size cap, and when the connections
// are at their cap the oldest is closed for the new one. A scraper or health check sends
// its request at once and is answered at once, however many slow (slowloris) connections
// are open alongside it. A client that asks for it keeps its connection for its next request
// (HTTP/1.1 keep-alive, each request with a deadline of its own); any other is closed
// after its answer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "daemon/listen_address.h"
#include "daemon/scrape_connection.h"
#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {

// What a path answers. Called on the server's thread, one request at a time.
using ScrapeRoute = std::function<ScrapeAnswer()>;

class ScrapeServer {
 public:
  // Binds `address` and listens on it (a taken port fails; port 0 takes a free one), so a
  // caller can fail before it does what a server that cannot listen would have to undo.
  // Connections wait in the listener's queue until start() serves it.
  static Result<UniqueFd> openListener(const ListenAddress& address);
  // Serves `routes` on `listener` (from openListener) until destroyed.
  static Result<std::unique_ptr<ScrapeServer>> start(UniqueFd listener,
                                                     std::map<std::string, ScrapeRoute> routes,
                                                     ScrapeLimits limits = {});
  // openListener, then start.
  static Result<std::unique_ptr<ScrapeServer>> start(const ListenAddress& address,
                                                     std::map<std::string, ScrapeRoute> routes,
                                                     ScrapeLimits limits = {});
  ~ScrapeServer();
  ScrapeServer(const ScrapeServer&) = delete;
  ScrapeServer& operator=(const ScrapeServer&) = delete;

  uint16_t port() const { return port_; }

 private:
  ScrapeServer() = default;
  void serve();

  UniqueFd listener_;
  UniqueFd stop_;  // an eventfd: written to end serve()
  uint16_t port_ = 0;
  std::map<std::string, ScrapeRoute> routes_;
  ScrapeLimits limits_;
  std::thread thread_;
};

}  // namespace floodgate::daemon
