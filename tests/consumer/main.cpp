// SPDX-License-Identifier: MIT
// A service built against the installed libfloodgate alone: one policy of one request per
// client, a cpp-httplib server on loopback, and two requests from one client. The first
// must be served, the second answered 429 with Retry-After and the RateLimit fields.
// Exit 0 when all of that holds; otherwise a line saying what did not, and exit 1.
#include <floodgate/adapters/httplib_adapter.h>
#include <floodgate/core/config_parser.h>
#include <httplib.h>

#include <iostream>
#include <memory>
#include <string>
#include <thread>

namespace {

constexpr const char* kConfig = R"(http:
  policies:
    - {name: per-ip, key: ip, algorithm: fixed_window, limit: 1, window_ms: 60000}
)";

int fail(const std::string& why) {
  std::cerr << "consumer: " << why << "\n";
  return 1;
}

}  // namespace

int main() {
  auto config = floodgate::http::parseHttpConfigText(kConfig, "consumer.yaml");
  if (!config) return fail(config.error().message);
  auto limiter = floodgate::http::Limiter::create(std::move(*config),
                                                  std::make_shared<floodgate::http::SteadyClock>());
  if (!limiter) return fail(limiter.error().message);

  httplib::Server server;
  floodgate::http::installRateLimiter(server, std::move(*limiter));
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hello\n", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  if (port <= 0) return fail("cannot bind a loopback port");
  std::thread serving([&] { server.listen_after_bind(); });

  httplib::Client client("127.0.0.1", port);
  auto first = client.Get("/");
  auto second = client.Get("/");
  server.stop();
  serving.join();

  if (!first || first->status != 200) return fail("the first request was not served 200");
  if (!first->has_header("RateLimit")) return fail("the first response has no RateLimit field");
  if (!second) return fail("the second request got no answer");
  if (second->status != 429) {
    return fail("the second request got " + std::to_string(second->status) + ", not 429");
  }
  for (const char* field : {"RateLimit", "RateLimit-Policy", "Retry-After"}) {
    if (!second->has_header(field)) return fail(std::string("the 429 has no ") + field);
  }
  std::cout << "consumer: 200 then 429 with RateLimit: " << second->get_header_value("RateLimit")
            << "\n";
  return 0;
}
