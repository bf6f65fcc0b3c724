// SPDX-License-Identifier: MIT
// floodgate_bench_http_floor: the example service's /api/items with no limiter, and with
// --redis one PING through floodgate's Redis client per request: the cheapest round trip a
// store that asks Redis on every request could make (with --own-connections, each server
// thread PINGs on a connection of its own instead, the client's sharing of round trips left
// out). scripts/bench.sh measures the two under
// wrk to say how near the baseline any such store can come on the machine it runs on.
#include <httplib.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "floodgate/redis/client.h"

namespace {

using floodgate::http::redis::Address;
using floodgate::http::redis::Client;
using floodgate::http::redis::ClientOptions;
using floodgate::http::redis::Connection;
using floodgate::http::redis::RoutedCommand;

// One PING on this thread's own connection (opened on its first call, again after a failure).
bool pingOnOwnConnection(const Address& address) {
  thread_local std::unique_ptr<Connection> connection;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  if (!connection || connection->broken()) {
    auto opened = Connection::open(address, deadline);
    if (!opened) return false;
    connection = std::move(*opened);
  }
  auto replies =
      connection->pipeline(std::vector<floodgate::http::redis::Command>{{"PING"}}, deadline);
  return replies && replies->size() == 1 && !replies->front().isError();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"floodgate_bench_http_floor: the HTTP bench's floor for Redis stores",
               "floodgate_bench_http_floor"};
  std::string redis_address;
  app.add_option("--redis", redis_address,
                 "HOST:PORT of a redis-server to PING once per request (none: no Redis)");
  bool own_connections = false;
  app.add_flag("--own-connections", own_connections,
               "PING on a connection of each server thread's own, not through the shared client");
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<Client> client;
  Address address;
  if (!redis_address.empty()) {
    auto parsed = Address::parse(redis_address);
    if (!parsed) {
      std::cerr << "floodgate_bench_http_floor: error: " << parsed.error().message << "\n";
      return 2;
    }
    address = *parsed;
    ClientOptions options;
    options.seeds = {address};
    if (!own_connections) client = std::make_unique<Client>(options);
  }
  // The same PING for every request; its key only routes it (a single server has one node).
  const std::vector<RoutedCommand> ping = {{"", {"PING"}}};

  httplib::Server server;
  // as the example service: keep-alive connections kept, replies not held back by Nagle
  server.set_keep_alive_max_count(1000);
  server.set_tcp_nodelay(true);
  server.Get("/api/items", [&](const httplib::Request&, httplib::Response& res) {
    if (client) {
      auto replies = client->run(ping);
      if (!replies || replies->size() != 1 || replies->front().isError()) {
        res.status = 503;
        return;
      }
    } else if (own_connections && !pingOnOwnConnection(address)) {
      res.status = 503;
      return;
    }
    res.set_content(R"({"items":["anvil","rope","kite"]})", "application/json");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  if (port < 0) {
    std::cerr << "floodgate_bench_http_floor: error: cannot listen on 127.0.0.1\n";
    return 1;
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::thread([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    server.stop();
  }).detach();
  std::cout << "listening on 127.0.0.1:" << port << std::endl;
  return server.listen_after_bind() ? 0 : 1;
}
