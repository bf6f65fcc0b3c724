// SPDX-License-Identifier: MIT
// Keep-alive clients of a cpp-httplib server behind the adapter on 127.0.0.1: the server's
// end of their connection has Nagle's algorithm off, so no response (a 429 included) waits
// for the client's delayed ACK. Read from the socket itself, never from a clock.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "floodgate/adapters/httplib_adapter.h"
#include "floodgate/core/config_parser.h"
#include "socket_probe.h"

namespace floodgate::http {
namespace {

using testing::KeepAliveClient;
using testing::serverTcpNodelay;

// One request per client address in a window longer than any test: the first is admitted,
// the second answered 429, whatever the time.
constexpr const char* kOneRequest = R"(http:
  policies:
    - name: once
      key: ip
      algorithm: fixed_window
      limit: 1
      window_ms: 604800000
)";

// The limiter in front of a cpp-httplib server on a free loopback port whose own setting
// is Nagle on (cpp-httplib 0.11's default, set here whatever the default), its idle
// keep-alive connections kept open long enough for any test to look at them.
class Service {
 public:
  explicit Service(HttplibOptions options) {
    auto config = parseHttpConfigText(kOneRequest, "test.yaml");
    EXPECT_TRUE(config.ok()) << config.error().message;
    auto limiter = Limiter::create(std::move(*config), std::make_shared<SteadyClock>());
    EXPECT_TRUE(limiter.ok());
    server_.Get("/items", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"items":[]})", "application/json");
    });
    server_.set_keep_alive_timeout(600);
    server_.set_tcp_nodelay(false);
    installRateLimiter(server_, std::move(*limiter), std::move(options));
    port_ = server_.bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Service() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(KeepAlive, TheAdapterTurnsNagleOffOnTheServersConnections) {
  Service service({});
  KeepAliveClient client(service.port());
  ASSERT_GE(client.fd(), 0);
  EXPECT_EQ(client.get("/items"), 200);
  EXPECT_EQ(client.get("/items"), 429);  // the same connection: a keep-alive client's retry
  // With Nagle on, the second send of each response (cpp-httplib sends head, then body)
  // would wait for the client to acknowledge the first: up to a delayed ACK, ~40 ms.
  EXPECT_EQ(serverTcpNodelay(getpid(), client), 1);
}

// The probe above can tell: the server's own setting shows through when the adapter is told
// to leave it alone.
TEST(KeepAlive, WithTcpNodelayFalseTheServersSettingStays) {
  HttplibOptions options;
  options.tcp_nodelay = false;
  Service service(std::move(options));
  KeepAliveClient client(service.port());
  ASSERT_GE(client.fd(), 0);
  EXPECT_EQ(client.get("/items"), 200);
  EXPECT_EQ(serverTcpNodelay(getpid(), client), 0);
}

}  // namespace
}  // namespace floodgate::http
