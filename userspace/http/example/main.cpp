// SPDX-License-Identifier: MIT
// floodgate-http-example: a small API limited by the config's `http:` section (or by the
// policies floodgate publishes, followed live), with /metrics.
#include <httplib.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <iostream>
#include <thread>

#include "floodgate/adapters/httplib_adapter.h"
#include "floodgate/core/config_parser.h"
#include "floodgate/core/headers.h"
#include "floodgate/core/secret_file.h"
#include "floodgate/fleet/fleet_secret.h"
#include "floodgate/fleet/live_reporter.h"
#include "floodgate/fleet/policy_watcher.h"
#include "floodgate/fleet/redis_policy_watcher.h"
#include "floodgate/redis/store_factory.h"
#include "http/example/service_metrics.h"

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
// A report takes `report_work` to build: a slow route to rehearse overload with (shedding).
void addRoutes(httplib::Server& server, example::ServiceMetrics& metrics,
               std::chrono::milliseconds report_work) {
  auto json = [&metrics](std::string route, std::string body) {
    return [&metrics, route = std::move(route), body = std::move(body)](const httplib::Request&,
                                                                        httplib::Response& res) {
      res.set_content(body, "application/json");
      metrics.countResponse(route, 200);
    };
  };
  server.Get("/api/items", json("/api/items", R"({"items":["anvil","rope","kite"]})"));
  // An order without a body is malformed: 400 before any work, and the limiter charges it one
  // unit per policy instead of the route's cost (HttplibOptions::bad_request_cost; the
  // route is named in malformed_route_400).
  server.Post("/api/orders", [&metrics, accept = json("/api/orders", R"({"order":"accepted"})")](
                                 const httplib::Request& req, httplib::Response& res) {
    if (!req.body.empty()) return accept(req, res);
    res.status = 400;
    res.set_content(R"({"type":"about:blank","title":"Bad Request","status":400,)"
                    R"("detail":"an order needs a body"})",
                    "application/problem+json");
    metrics.countResponse("/api/orders", 400);
  });
  server.Get("/api/reports",
             [report_work, reply = json("/api/reports", R"({"report":"quarterly","rows":1200})")](
                 const httplib::Request& req, httplib::Response& res) {
               if (report_work.count() > 0) std::this_thread::sleep_for(report_work);
               reply(req, res);
             });
  server.Get("/healthz", json("/healthz", R"({"ok":true})"));
}

// Where the policies come from: a config file read once, or a published policy file
// (`floodgate run` / `floodgate http publish` write it) followed while the service runs.
struct PolicySource {
  std::string config_path;
  std::string policies_path;
  std::string redis_address;  // with redis_key: published to Redis, for a fleet
  std::string redis_key;
  std::string secret_file;  // with redis_key: the fleet's secret the controller signs with
  std::string secret;
  redis::Credentials login;  // with redis_key: for a Redis that asks for a login
  std::string password_file;

  bool followed() const { return !policies_path.empty() || !redis_key.empty(); }
};

RedisPolicySource redisSource(const PolicySource& source) {
  RedisPolicySource redis;
  redis.client.seeds = {*redis::Address::parse(source.redis_address)};  // checked in main
  redis.key = source.redis_key;
  redis.secret = source.secret;
  redis.client.credentials = source.login;
  return redis;
}

// The first policy set; the error is the line(s) to print.
Result<std::shared_ptr<LiveLimiter>> loadPolicies(const PolicySource& source) {
  auto clock = std::make_shared<SteadyClock>();
  if (!source.policies_path.empty()) {
    auto text = readPolicyFile(source.policies_path);
    if (!text) return Error::failure("floodgate-http-example: error: " + text.error().message);
    return makeLiveLimiter(*text, source.policies_path, clock);
  }
  if (!source.redis_key.empty()) {
    auto text = fetchPolicyDocument(redisSource(source));
    if (!text) return Error::failure("floodgate-http-example: error: " + text.error().message);
    return makeSignedLiveLimiter(*text, "redis:" + source.redis_key, redisSource(source).signing(),
                                 clock);
  }
  auto config = loadHttpConfig(source.config_path);
  if (!config) return config.error();
  auto made = Limiter::create(std::move(*config), clock);
  if (!made) return Error::failure("floodgate-http-example: error: " + made.error().message);
  return std::make_shared<LiveLimiter>(std::shared_ptr<Limiter>(std::move(*made)), "", clock);
}

int run(const PolicySource& source, const std::string& listen,
        std::chrono::milliseconds report_work, size_t threads) {
  auto address = parseListen(listen);
  if (!address) {
    std::cerr << "floodgate-http-example: error: " << address.error().message << "\n";
    return 2;
  }
  auto loaded = loadPolicies(source);
  if (!loaded) {
    std::cerr << loaded.error().message << "\n";
    return 1;
  }
  std::shared_ptr<LiveLimiter> live = std::move(*loaded);
  std::unique_ptr<PolicyFileWatcher> file_watcher;
  std::unique_ptr<RedisPolicyWatcher> redis_watcher;
  if (!source.policies_path.empty()) {
    auto started = PolicyFileWatcher::start(source.policies_path, live);
    if (!started) {
      std::cerr << "floodgate-http-example: error: " << started.error().message << "\n";
      return 1;
    }
    file_watcher = std::move(*started);
  } else if (!source.redis_key.empty()) {
    redis_watcher = RedisPolicyWatcher::start(redisSource(source), live);
  }
  // http.escalate: clients that keep getting rejected are reported to floodgate run, as the
  // current set says (a published change applies without a restart)
  auto reporter = std::make_shared<LiveReporter>(live, std::make_shared<SteadyClock>());

  example::ServiceMetrics metrics;
  httplib::Server server;
  // A request is in flight (http.shedding) only while a pool thread serves it.
  if (threads > 0) server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // cpp-httplib closes a keep-alive connection after 5 requests by default, so its client
  // connects again for every fifth request (under wrk the service answered a third fewer
  // requests/s for it). A connection keeps its server thread while open, so clients beyond
  // the pool's threads wait for one to close; at 1000 requests (nginx's keepalive_requests)
  // they still take turns.
  server.set_keep_alive_max_count(1000);
  addRoutes(server, metrics, report_work);
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        metrics.render(*live->current(), reporter.get(), source.followed() ? live.get() : nullptr),
        "text/plain; version=0.0.4");
  });
  HttplibOptions options;
  // A stand-in for authentication: the user the request says it is.
  options.user_of = [](const httplib::Request& req) { return req.get_header_value("X-User"); };
  options.on_verdict = [&metrics, reporter](const httplib::Request& req, const Verdict& verdict) {
    metrics.countVerdict(verdict);
    if (verdict.allowed()) return;
    metrics.countResponse(routeLabel(req.path), statusFor(verdict));
    if (verdict.reportable()) reporter->noteRejection(verdict.client_key);
  };
  // Its 400 refuses an order before anything is done for it (see addRoutes).
  options.malformed_route_400 = [](const httplib::Request& req) {
    return req.method == "POST" && req.path == "/api/orders";
  };
  // before binding: it turns TCP_NODELAY on, which the listening socket hands to connections
  installRateLimiter(server, live, std::move(options));

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
  floodgate::http::useRedisStores();  // a config's http.store may be of type redis
  CLI::App app{"floodgate-http-example: a small API rate-limited by a floodgate config",
               "floodgate-http-example"};
  PolicySource source;
  std::string listen = "127.0.0.1:8080";
  auto* config =
      app.add_option("--config", source.config_path, "YAML config with an http: section");
  auto* policies = app.add_option("--policies", source.policies_path,
                                  "Policies published by floodgate (http.publish.file), followed: "
                                  "a new version applies without a restart");
  auto* redis = app.add_option("--policy-redis", source.redis_address,
                               "Redis HOST:PORT the policies are published to (http.publish."
                               "redis_key), followed through pub/sub");
  app.add_option("--policy-key", source.redis_key,
                 "The Redis key of the published policies (with --policy-redis)")
      ->needs(redis);
  app.add_option("--policy-secret-file", source.secret_file,
                 "The fleet's secret the controller signs the policies with (its "
                 "http.publish.secret_file or http.escalate.secret_file; with --policy-redis)")
      ->needs(redis);
  app.add_option("--policy-redis-user", source.login.username,
                 "The ACL user to log in to that Redis as (with --policy-redis-password-file)")
      ->needs(redis);
  auto* password = app.add_option("--policy-redis-password-file", source.password_file,
                                  "A file (chmod 600) holding the password of that Redis's "
                                  "requirepass or ACL user (with --policy-redis)")
                       ->needs(redis);
  app.get_option("--policy-redis-user")->needs(password);
  config->excludes(policies);
  config->excludes(redis);
  policies->excludes(redis);
  app.add_option("--listen", listen, "ADDR:PORT to serve on (port 0: any free port)");
  int64_t report_ms = 0;
  app.add_option("--report-ms", report_ms,
                 "Milliseconds /api/reports works before it answers: a slow route to rehearse "
                 "overload with (http.shedding)")
      ->check(CLI::Range(int64_t{0}, int64_t{60'000}));
  size_t threads = 0;
  app.add_option("--threads", threads,
                 "Server threads (default: cpp-httplib's pool); http.shedding's thresholds "
                 "must be below it, as a request is in flight only while a thread serves it")
      ->check(CLI::Range(size_t{1}, size_t{4096}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);    // prints help, or the usage error
    return code == 0 ? 0 : 2;  // usage errors exit 2, as floodgate's own
  }
  if (!source.redis_address.empty()) {
    if (auto address = redis::Address::parse(source.redis_address); !address) {
      std::cerr << "floodgate-http-example: error: --policy-redis " << address.error().message
                << "\n";
      return 2;
    }
    if (source.redis_key.empty()) {
      std::cerr << "floodgate-http-example: error: --policy-redis needs --policy-key KEY (the "
                   "config's http.publish.redis_key)\n";
      return 2;
    }
    if (source.secret_file.empty()) {
      std::cerr << "floodgate-http-example: error: --policy-redis needs --policy-secret-file "
                   "FILE (the secret the controller signs the policies with)\n";
      return 2;
    }
    auto secret = loadFleetSecret(source.secret_file, "--policy-secret-file");
    if (!secret) {
      std::cerr << "floodgate-http-example: error: " << secret.error().message << "\n";
      return 2;
    }
    source.secret = std::move(*secret);
    if (!source.password_file.empty()) {
      auto login = loadRedisPassword(source.password_file, "--policy-redis-password-file");
      if (!login) {
        std::cerr << "floodgate-http-example: error: " << login.error().message << "\n";
        return 2;
      }
      source.login.password = std::move(*login);
    }
  }
  if (source.config_path.empty() && !source.followed()) {
    std::cerr << "floodgate-http-example: error: give --config FILE (read once), or --policies "
                 "FILE or --policy-redis HOST:PORT --policy-key KEY (published by floodgate, "
                 "followed)\n";
    return 2;
  }
  return run(source, listen, std::chrono::milliseconds(report_ms), threads);
}
