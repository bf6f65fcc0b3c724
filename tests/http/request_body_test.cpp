// SPDX-License-Identifier: MIT
// A body cpp-httplib leaves unread (a refused request's, or one sent with GET) never becomes a
// request of its own on a keep-alive connection: through a trusted proxy it would name any
// client and go past every limit.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "floodgate/adapters/httplib_adapter.h"
#include "floodgate/core/config_parser.h"

namespace floodgate::http {
namespace {

// One request per client a week, clients named by X-Forwarded-For from the trusted loopback
// proxy (this test's own socket).
constexpr const char* kBehindAProxy = R"(http:
  trusted_proxies: [127.0.0.1]
  client_header: x-forwarded-for
  policies:
    - name: once
      key: ip
      algorithm: fixed_window
      limit: 1
      window_ms: 604800000
)";

// The request a body smuggles: a client the limiter has not seen, at a route of its own.
constexpr const char* kSmuggled =
    "GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 203.0.113.9\r\n\r\n";

class Service {
 public:
  Service() {
    auto config = parseHttpConfigText(kBehindAProxy, "test.yaml");
    EXPECT_TRUE(config.ok()) << config.error().message;
    auto limiter = Limiter::create(std::move(*config), std::make_shared<SteadyClock>());
    EXPECT_TRUE(limiter.ok());
    auto ok = [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", "text/plain");
    };
    server_.Get("/items", ok);
    server_.Post("/items", ok);
    server_.Get("/smuggled", [this](const httplib::Request&, httplib::Response& res) {
      smuggled_ran_ = true;
      res.set_content("smuggled", "text/plain");
    });
    server_.set_keep_alive_timeout(600);
    installRateLimiter(server_, std::move(*limiter), {});
    port_ = server_.bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Service() {
    server_.stop();
    thread_.join();
  }

  int port() const { return port_; }
  bool smuggledRan() const { return smuggled_ran_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> smuggled_ran_{false};
};

// One connection, written to and read from by hand: a request's head and its body can go out
// apart, as a client's do when it waits for 100 Continue, or as TCP segments arrive.
class Connection {
 public:
  explicit Connection(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~Connection() {
    if (fd_ >= 0) close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool send(const std::string& bytes) {
    return fd_ >= 0 && ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                           static_cast<ssize_t>(bytes.size());
  }
  // Reads until what came holds `text` `times` times, the server closes, or `wait_ms` pass
  // without a byte; all that came.
  const std::string& readUntil(std::string_view text, int wait_ms = 30'000, size_t times = 1) {
    auto count = [&] {
      size_t n = 0;
      for (size_t at = received_.find(text); at != std::string::npos;
           at = received_.find(text, at + 1)) {
        ++n;
      }
      return n;
    };
    while (count() < times && !closed_) {
      pollfd ready{fd_, POLLIN, 0};
      if (poll(&ready, 1, wait_ms) != 1) break;
      char buffer[4096];
      const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      received_.append(buffer, static_cast<size_t>(n));
    }
    return received_;
  }
  // Whether the server closed the connection within `wait_ms` (reading what comes before).
  bool closedWithin(int wait_ms) {
    while (!closed_) {
      pollfd ready{fd_, POLLIN, 0};
      if (poll(&ready, 1, wait_ms) != 1) break;
      char buffer[4096];
      const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) closed_ = true;
      if (n > 0) received_.append(buffer, static_cast<size_t>(n));
    }
    return closed_;
  }
  const std::string& received() const { return received_; }

 private:
  int fd_;
  std::string received_;
  bool closed_ = false;
};

size_t responses(const std::string& bytes) {
  size_t count = 0;
  for (size_t at = bytes.find("HTTP/1.1 "); at != std::string::npos;
       at = bytes.find("HTTP/1.1 ", at + 1)) {
    ++count;
  }
  return count;
}

std::string postHead(const std::string& client, size_t length, const std::string& extra) {
  return "POST /items HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: " + client +
         "\r\nContent-Type: text/plain\r\n" + extra + "Content-Length: " + std::to_string(length) +
         "\r\n\r\n";
}

// A 429's body is never read by cpp-httplib: the connection ends after the answer, and the
// request in the body, sent once the answer (or 100 Continue) came, is never served.
TEST(RequestBody, ARefusedRequestsBodyIsNeverReadAsARequest) {
  Service service;
  {
    Connection first(service.port());
    ASSERT_TRUE(first.send(postHead("198.51.100.1", 1, "Connection: close\r\n") + "x"));
    ASSERT_EQ(first.readUntil("\r\n\r\nok").rfind("HTTP/1.1 200", 0), 0u);
  }
  const std::string body = kSmuggled;
  for (const char* extra : {"", "Expect: 100-continue\r\n"}) {
    Connection refused(service.port());
    ASSERT_TRUE(refused.send(postHead("198.51.100.1", body.size(), extra)));
    if (*extra != '\0') {
      ASSERT_NE(refused.readUntil("100 Continue\r\n\r\n").find("HTTP/1.1 100"), std::string::npos);
    } else {
      ASSERT_NE(refused.readUntil("\"violated-policies\"").find("HTTP/1.1 429"), std::string::npos);
    }
    refused.send(body);  // may fail: the server has closed
    EXPECT_TRUE(refused.closedWithin(10'000)) << extra;
    const std::string& answers = refused.received();
    EXPECT_NE(answers.find("HTTP/1.1 429"), std::string::npos) << extra << answers;
    EXPECT_NE(answers.find("Connection: close"), std::string::npos) << extra << answers;
    EXPECT_EQ(answers.find("smuggled"), std::string::npos) << extra << answers;
    EXPECT_FALSE(service.smuggledRan()) << extra;
  }
}

// cpp-httplib 0.11 reads no body sent with GET, admitted or not: such a request is refused up
// front and its connection closed.
TEST(RequestBody, ABodySentWithGetIsRefusedAndItsConnectionClosed) {
  Service service;
  const std::string body = kSmuggled;
  Connection connection(service.port());
  ASSERT_TRUE(
      connection.send("GET /items HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 198.51.100.2\r\n"
                      "Content-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n"));
  connection.readUntil("\r\n\r\n{");
  connection.send(body);
  EXPECT_TRUE(connection.closedWithin(10'000));
  const std::string& answers = connection.received();
  EXPECT_EQ(responses(answers), 1u) << answers;
  EXPECT_EQ(answers.rfind("HTTP/1.1 400", 0), 0u) << answers;
  EXPECT_NE(answers.find("reads no body sent with this method"), std::string::npos) << answers;
  EXPECT_FALSE(service.smuggledRan());
  // the client was not charged: its one request a week is still there
  Connection next(service.port());
  ASSERT_TRUE(
      next.send("GET /items HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 198.51.100.2\r\n"
                "Connection: close\r\n\r\n"));
  EXPECT_EQ(next.readUntil("\r\n\r\nok").rfind("HTTP/1.1 200", 0), 0u);
}

// A request without a body keeps its connection: a keep-alive client's next request on it,
// even after a 429, is answered.
TEST(RequestBody, WithoutABodyARefusalKeepsTheConnection) {
  Service service;
  const std::string get =
      "GET /items HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 198.51.100.3\r\n\r\n";
  Connection connection(service.port());
  ASSERT_TRUE(connection.send(get));
  ASSERT_EQ(responses(connection.readUntil("\r\n\r\nok")), 1u);
  ASSERT_TRUE(connection.send(get));
  EXPECT_NE(connection.readUntil("\"violated-policies\"").find("HTTP/1.1 429"), std::string::npos);
  ASSERT_TRUE(connection.send(get));
  EXPECT_EQ(responses(connection.readUntil("\"violated-policies\"", 30'000, 2)), 3u);
  EXPECT_FALSE(connection.closedWithin(200)) << connection.received();
}

}  // namespace
}  // namespace floodgate::http
