// SPDX-License-Identifier: MIT
// Which 400s the adapter charges only bad_request_cost, under a real cpp-httplib server on
// 127.0.0.1: cpp-httplib's own and those of routes the service names; a route's other 400s
// (a wrong password) pay the route's price.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "floodgate/adapters/httplib_adapter.h"
#include "floodgate/core/config_parser.h"

namespace floodgate::http {
namespace {

// One client (127.0.0.1), 30 units an hour by a clock the test holds still; a token request
// and an order cost 10 each.
constexpr const char* kPerIp = R"(http:
  retry_after_jitter: 0
  policies:
    - name: per-ip
      key: ip
      algorithm: fixed_window
      limit: 30
      window_ms: 3600000
      routes:
        - match: {path_prefix: /oauth/token}
          cost: 10
        - match: {path_prefix: /api/orders}
          cost: 10
)";

// An OAuth2 token endpoint checks the password, the dear part, and answers a wrong one 400
// invalid_grant (RFC 6749 5.2); an order without a body is refused 400 before any work.
class Service {
 public:
  explicit Service(HttplibOptions options) {
    auto config = parseHttpConfigText(kPerIp, "test.yaml");
    EXPECT_TRUE(config.ok()) << config.error().message;
    auto made = Limiter::create(std::move(*config), std::make_shared<ManualClock>(1'000'000));
    EXPECT_TRUE(made.ok());
    server_.Post("/oauth/token", [](const httplib::Request& req, httplib::Response& res) {
      if (req.get_param_value("password") == "right") {
        res.set_content(R"({"access_token":"t"})", "application/json");
        return;
      }
      res.status = 400;
      res.set_content(R"({"error":"invalid_grant"})", "application/json");
    });
    server_.Post("/api/orders", [](const httplib::Request& req, httplib::Response& res) {
      if (req.body.empty()) {
        res.status = 400;
        return;
      }
      res.set_content(R"({"order":"accepted"})", "application/json");
    });
    installRateLimiter(server_, std::move(*made), std::move(options));
    port_ = server_.bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Service() {
    server_.stop();
    thread_.join();
  }

  // The status of a POST of `body` to `path`, 0 if none came.
  int post(const std::string& path, const std::string& body) {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(30);
    auto res = client.Post(path.c_str(), body, "application/x-www-form-urlencoded");
    return res ? res->status : 0;
  }
  int wrongPassword() { return post("/oauth/token", "grant_type=password&password=wrong"); }
  int emptyOrder() { return post("/api/orders", ""); }

  // A POST to /oauth/token whose chunked body cannot be read ("zz" is no chunk size):
  // cpp-httplib answers 400 itself, before any route runs. The status, 0 if none came.
  int unreadableBody() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int status = 0;
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
      const std::string request =
          "POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
          "Transfer-Encoding: chunked\r\n\r\nzz\r\n";
      if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
        std::string response;
        char buf[4096];
        ssize_t n;
        while (response.find("\r\n") == std::string::npos &&
               (n = recv(fd, buf, sizeof buf, 0)) > 0) {
          response.append(buf, static_cast<size_t>(n));
        }
        // "HTTP/1.1 400 Bad Request"
        if (response.size() > 12) status = std::atoi(response.substr(9, 3).c_str());
      }
    }
    close(fd);
    return status;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

// A wrong password is the route's work done: each costs the route's 10, so the fourth is
// refused, where at bad_request_cost each a client would guess ten times as often.
TEST(BadRequest, ARoutes400AfterItsWorkPaysTheRoutesCost) {
  Service service({});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(service.wrongPassword(), 400) << i;
  EXPECT_EQ(service.wrongPassword(), 429)
      << "three wrong passwords took 3 units, where each should cost the route's 10";
}

// The orders route refuses an empty order before any work, and says so: each costs 1. Four
// of them and two wrong passwords take 24 of 30; the third wrong password is refused.
TEST(BadRequest, ARouteNamedMalformedRoute400PaysBadRequestCost) {
  HttplibOptions options;
  options.malformed_route_400 = [](const httplib::Request& req) {
    return req.path == "/api/orders";
  };
  Service service(std::move(options));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(service.emptyOrder(), 400) << i;
  EXPECT_EQ(service.wrongPassword(), 400);
  EXPECT_EQ(service.wrongPassword(), 400);
  EXPECT_EQ(service.wrongPassword(), 429);
}

// A body cpp-httplib could not read is answered 400 before any route ran, whatever the
// route: it costs 1 without the service naming anything. Five of them and two wrong
// passwords take 25 of 30; the third wrong password is refused.
TEST(BadRequest, A400BeforeAnyRouteRanPaysBadRequestCost) {
  Service service({});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(service.unreadableBody(), 400) << i;
  EXPECT_EQ(service.wrongPassword(), 400);
  EXPECT_EQ(service.wrongPassword(), 400);
  EXPECT_EQ(service.wrongPassword(), 429);
}

}  // namespace
}  // namespace floodgate::http
