// SPDX-License-Identifier: MIT
// MetricsServer: the two routes; everything else is the ScrapeServer's 404.
#include "daemon/metrics_server.h"

#include <map>
#include <string>
#include <utility>

namespace floodgate::daemon {

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(UniqueFd listener, DaemonState& state) {
  std::map<std::string, ScrapeRoute> routes;
  routes["/metrics"] = [&state] {
    return ScrapeAnswer{200, "text/plain; version=0.0.4; charset=utf-8", state.scrape()};
  };
  routes["/healthz"] = [&state] {
    std::string body;
    for (const std::string& problem : state.problems()) body += problem + "\n";
    if (body.empty()) return ScrapeAnswer{200, "text/plain", "ok\n"};
    return ScrapeAnswer{503, "text/plain", std::move(body)};
  };
  auto server = ScrapeServer::start(std::move(listener), std::move(routes));
  if (!server) return server.error();
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(*server)));
}

}  // namespace floodgate::daemon
