// SPDX-License-Identifier: MIT
// floodgate-http-example: a small API limited by the config's `http:` section, with /metrics.
#include <httplib.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <iostream>
#include <thread>

#include "http/config_parser.h"
#include "http/example/service_metrics.h"
#include "http/headers.h"
#include "http/httplib_adapter.h"
#include "http/offender_reporter.h"

namespace {

using floodgate::Error;
using floodgate::Result;
using namespace floodgate::http;

struct ListenAddress {
  std::string host;
  int port = 0;
};

// "127.0.0.1:8080", "[::1]:8080", "0.0.0.0:0" (port 0: any free port).
Result<ListenAddress> parseListen(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Error::usage("--listen '" + text + "' must be ADDR:PORT, e.g. 127.0.0.1:8080");
  }
  ListenAddress address;
  address.host = text.substr(0, colon);
  if (address.host.front() == '[' && address.host.back() == ']') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  std::string_view port = std::string_view(text).substr(colon + 1);
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), address.port);
  if (ec != std::errc() || end != port.data() + port.size() || address.port < 0 ||
      address.port > 65535) {
    return Error::usage("--listen '" + text + "': port must be 0-65535");
  }
  return address;
}

constexpr std::string_view kRoutes[] = {"/api/items", "/api/orders", "/api/reports", "/healthz"};

// A metrics label for a request path: one of the routes, or "other" (paths are chosen by
// clients, so they must not become label values).
std::string routeLabel(const std::string& path) {
  for (std::string_view route : kRoutes) {
    if (path == route) return path;
  }
  return "other";
}

// The demo's routes, each with its own cost in the config's `routes:` (see
// config/examples/http-api.yaml): reading is cheap, writing dearer, a report dearest.
void addRoutes(httplib::Server& server, example::ServiceMetrics& metrics) {
  auto json = [&metrics](std::string route, std::string body) {
    return [&metrics, route = std::move(route), body = std::move(body)](const httplib::Request&,
                                                                        httplib::Response& res) {
      res.set_content(body, "application/json");
      metrics.countResponse(route, 200);
    };
  };
  server.Get("/api/items", json("/api/items", R"({"items":["anvil","rope","kite"]})"));
  server.Post("/api/orders", json("/api/orders", R"({"order":"accepted"})"));
  server.Get("/api/reports", json("/api/reports", R"({"report":"quarterly","rows":1200})"));
  server.Get("/healthz", json("/healthz", R"({"ok":true})"));
}

int run(const std::string& config_path, const std::string& listen) {
  auto address = parseListen(listen);
  if (!address) {
    std::cerr << "floodgate-http-example: error: " << address.error().message << "\n";
    return 2;
  }
  auto config = loadHttpConfig(config_path);
  if (!config) {
    std::cerr << config.error().message << "\n";
    return 1;
  }
  auto made = Limiter::create(std::move(*config), std::make_shared<SteadyClock>());
  if (!made) {
    std::cerr << "floodgate-http-example: error: " << made.error().message << "\n";
    return 1;
  }
  std::shared_ptr<Limiter> limiter = std::move(*made);
  // http.escalate: clients that keep getting rejected are reported to floodgate run
  std::shared_ptr<OffenderReporter> reporter;
  if (limiter->config().escalate.enabled) {
    auto created =
        OffenderReporter::create(limiter->config().escalate, std::make_shared<SteadyClock>());
    if (!created) {
      std::cerr << "floodgate-http-example: error: " << created.error().message << "\n";
      return 1;
    }
    reporter = std::move(*created);
  }

  example::ServiceMetrics metrics;
  httplib::Server server;
  addRoutes(server, metrics);
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(*limiter, reporter.get()), "text/plain; version=0.0.4");
  });
  HttplibOptions options;
  // A stand-in for authentication: the user the request says it is.
  options.user_of = [](const httplib::Request& req) { return req.get_header_value("X-User"); };
  options.on_verdict = [&metrics, reporter](const httplib::Request& req, const Verdict& verdict) {
    metrics.countVerdict(verdict);
    if (verdict.allowed()) return;
    metrics.countResponse(routeLabel(req.path), statusFor(verdict));
    if (reporter) reporter->noteRejection(verdict.client_ip);
  };
  installRateLimiter(server, limiter, std::move(options));

  int port = address->port;
  if (port == 0) {
    port = server.bind_to_any_port(address->host);
  } else if (!server.bind_to_port(address->host, port)) {
    port = -1;
  }
  if (port < 0) {
    std::cerr << "floodgate-http-example: error: cannot listen on " << listen
              << " (address in use or not local?)\n";
    return 1;
  }

  // SIGINT/SIGTERM stop the server cleanly; they are blocked here and awaited on a thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    server.stop();
  });
  waiter.detach();

  std::cout << "listening on " << address->host << ":" << port << std::endl;
  bool ok = server.listen_after_bind();
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"floodgate-http-example: a small API rate-limited by a floodgate config",
               "floodgate-http-example"};
  std::string config_path;
  std::string listen = "127.0.0.1:8080";
  app.add_option("--config", config_path, "YAML config with an http: section")->required();
  app.add_option("--listen", listen, "ADDR:PORT to serve on (port 0: any free port)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return run(config_path, listen);
}
