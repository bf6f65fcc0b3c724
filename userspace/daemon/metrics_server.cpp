// SPDX-License-Identifier: MIT
// MetricsServer: two GET routes; everything else is httplib's 404.
#include "daemon/metrics_server.h"

#include <httplib.h>

namespace floodgate::daemon {

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const ListenAddress& address,
                                                            DaemonState& state) {
  std::unique_ptr<MetricsServer> out(new MetricsServer());
  out->server_ = std::make_unique<httplib::Server>();
  httplib::Server& server = *out->server_;
  server.Get("/metrics", [&state](const httplib::Request&, httplib::Response& res) {
    res.set_content(state.scrape(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/healthz", [&state](const httplib::Request&, httplib::Response& res) {
    std::string body;
    for (const std::string& problem : state.problems()) body += problem + "\n";
    res.status = body.empty() ? 200 : 503;
    res.set_content(body.empty() ? "ok\n" : body, "text/plain");
  });
  // A scrape is answered in more than one write (head, then body): without TCP_NODELAY the
  // body waits for the scraper's delayed ACK, up to 40 ms, on every scrape of a keep-alive
  // connection after the first few. The listening socket hands it to every connection.
  server.set_tcp_nodelay(true);
  // httplib's default adds SO_REUSEPORT, which would let a second daemon share the port
  // and split the scrapes between them; a taken port must fail the start instead.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  if (!server.bind_to_port(address.host, address.port)) {
    return Error::failure(
        "cannot listen for metrics on " + address.host + ":" + std::to_string(address.port) +
        " (in use, or not an address of this host): choose another with --metrics-listen");
  }
  out->thread_ = std::thread([&server] { server.listen_after_bind(); });
  return out;
}

MetricsServer::~MetricsServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace floodgate::daemon
