// SPDX-License-Identifier: MIT
// A body cpp-httplib leaves unread (a refused request's, or one sent with GET) never becomes a
// request of its own on a keep-alive connection: through a trusted proxy it would name any
// client and go past every limit.
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "floodgate/adapters/httplib_adapter.h"
#include "floodgate/core/config_parser.h"
#include "socket_probe.h"

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
  // `error_pages`: the service answers every 4xx and 5xx with a page of its own (an error
  // handler, which replaces the limiter's answer body).
  explicit Service(bool error_pages = false) {
    auto config = parseHttpConfigText(kBehindAProxy, "test.yaml");
    EXPECT_TRUE(config.ok()) << config.error().message;
    auto limiter = Limiter::create(std::move(*config), std::make_shared<SteadyClock>());
    EXPECT_TRUE(limiter.ok());
    auto ok = [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", "text/plain");
    };
    server_.Get("/items", ok);
    server_.Post("/items", ok);
    server_.Delete("/items", ok);
    if (error_pages) {
      server_.set_error_handler([](const httplib::Request&, httplib::Response& res) {
        res.set_content("<h1>" + std::to_string(res.status) + "</h1>", "text/html");
      });
    }
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
  explicit Connection(int port) : fd_(testing::connectToLoopback(port)) {}
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

// Sends the head of a request whose body cpp-httplib will not read, then (once its answer
// came, as a proxy's next segment would) a body holding another request: the answers, and
// whether the server closed the connection before the body could be read as that request.
struct Smuggled {
  std::string answers;
  bool closed = false;
};
Smuggled smuggle(const Service& service, const std::string& head, const std::string& wait_for) {
  Connection connection(service.port());
  Smuggled out;
  if (!connection.send(head)) return out;
  connection.readUntil(wait_for);
  out.closed = connection.closedWithin(10'000);
  connection.send(kSmuggled);  // fails once the server has closed
  connection.closedWithin(1'000);
  out.answers = connection.received();
  return out;
}

std::string withBody(const std::string& request_line, const std::string& extra) {
  return request_line + "\r\nHost: 127.0.0.1\r\n" + extra +
         "Content-Length: " + std::to_string(std::string(kSmuggled).size()) + "\r\n\r\n";
}

// Spends `client`'s one request a week, with a body that is read: the next is refused.
void spend(const Service& service, const std::string& client) {
  Connection first(service.port());
  ASSERT_TRUE(first.send(postHead(client, 1, "Connection: close\r\n") + "x"));
  ASSERT_EQ(first.readUntil("\r\n\r\nok").rfind("HTTP/1.1 200", 0), 0u);
}

// A 429's body is never read by cpp-httplib: the connection ends after the answer, and the
// request in the body, sent once the answer (or 100 Continue) came, is never served.
TEST(RequestBody, ARefusedRequestsBodyIsNeverReadAsARequest) {
  Service service;
  spend(service, "198.51.100.1");
  const size_t length = std::string(kSmuggled).size();
  for (const char* extra : {"", "Expect: 100-continue\r\n"}) {
    Smuggled refused = smuggle(service, postHead("198.51.100.1", length, extra), "429");
    EXPECT_TRUE(refused.closed) << extra << refused.answers;
    EXPECT_EQ(refused.answers.find("HTTP/1.1 429"), *extra ? 25u : 0u) << refused.answers;
    EXPECT_NE(refused.answers.find("Connection: close"), std::string::npos) << refused.answers;
    EXPECT_NE(refused.answers.find("\"violated-policies\":[\"once\"]}"), std::string::npos)
        << refused.answers;
    EXPECT_EQ(refused.answers.find("smuggled"), std::string::npos) << refused.answers;
  }
  EXPECT_FALSE(service.smuggledRan());
}

// A Range header cannot make the closing answer read past its text (it has no length for a
// range to apply to: cpp-httplib slices the text itself, or answers 416), nor keep the
// connection open.
TEST(RequestBody, ARangeNeitherReadsPastTheAnswerNorKeepsTheConnection) {
  Service service;
  const size_t length = std::string(kSmuggled).size();
  spend(service, "198.51.100.2");
  for (const char* range : {"Range: bytes=4096-8191\r\n", "Range: bytes=-0\r\n",
                            "Range: bytes=0-1,5-9\r\n", "Range: bytes=0-\r\n"}) {
    Smuggled refused = smuggle(service, postHead("198.51.100.2", length, range), "\r\n\r\n");
    EXPECT_TRUE(refused.closed) << range << refused.answers;
    EXPECT_EQ(refused.answers.rfind("HTTP/1.1 4", 0), 0u) << range << refused.answers;
    // headers and at most the whole problem+json: nothing from beyond it
    EXPECT_LT(refused.answers.size(), 1024u) << range << refused.answers;
    EXPECT_EQ(refused.answers.find('\0'), std::string::npos) << range;
  }
  EXPECT_FALSE(service.smuggledRan());
}

// cpp-httplib never reads a body sent with GET, HEAD or OPTIONS, nor a DELETE's without
// Content-Length: such a request is refused up front, nothing charged, and its connection
// ends after the answer. So does one it answers itself, its body unread (an encoding it
// cannot read), and a chunked one, whose chunks it may take as whole when they are not.
TEST(RequestBody, ABodyCppHttplibDoesNotReadEndsItsConnection) {
  Service service;
  struct Case {
    std::string head;
    std::string status;
  };
  const std::vector<Case> cases = {
      {withBody("GET /items HTTP/1.1", "X-Forwarded-For: 198.51.100.12\r\n"), "HTTP/1.1 400"},
      {withBody("HEAD /items HTTP/1.1", "X-Forwarded-For: 198.51.100.13\r\n"), "HTTP/1.1 400"},
      {withBody("OPTIONS /items HTTP/1.1", "X-Forwarded-For: 198.51.100.14\r\n"), "HTTP/1.1 400"},
      {"DELETE /items HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 198.51.100.10\r\n"
       "Transfer-Encoding: chunked\r\n\r\n",
       "HTTP/1.1 400"},
      {"POST /items HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 198.51.100.11\r\n"
       "Content-Encoding: gzip\r\nContent-Length: 66\r\n\r\n",
       "HTTP/1.1 4"},  // 415, or 400 where it can read gzip: the body is no gzip
      {"POST /items HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 198.51.100.15\r\n"
       "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
       "HTTP/1.1 200"},
  };
  for (const Case& c : cases) {
    Smuggled answered = smuggle(service, c.head, "\r\n\r\n");
    EXPECT_TRUE(answered.closed) << c.head << answered.answers;
    EXPECT_EQ(answered.answers.rfind(c.status, 0), 0u) << c.head << answered.answers;
    EXPECT_EQ(answered.answers.find("smuggled"), std::string::npos) << answered.answers;
  }
  // refused before any policy: the client's one request a week is still there
  spend(service, "198.51.100.12");
  EXPECT_FALSE(service.smuggledRan());
}

// A body cpp-httplib began to read and gave up on (a form part whose header runs past its
// bound) did not reach a route, whatever parts it read: the rest is unread, and the
// connection ends after the answer.
TEST(RequestBody, ABodyReadOnlyInPartEndsItsConnection) {
  Service service;
  const std::string body = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--b\r\n" +
                           std::string("X-Long: ") + std::string(9000, 'a') + kSmuggled;
  Connection connection(service.port());
  ASSERT_TRUE(connection.send(
      "POST /items HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 198.51.100.16\r\n"
      "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body));
  EXPECT_TRUE(connection.closedWithin(10'000)) << connection.received();
  EXPECT_EQ(connection.received().find("smuggled"), std::string::npos) << connection.received();
  EXPECT_FALSE(service.smuggledRan());
}

// What cpp-httplib answers before the limiter sees the request (a request line it cannot
// parse, a header line too long) read not even all the headers: the connection ends.
TEST(RequestBody, AnAnswerGivenBeforeTheLimiterSawTheRequestEndsItsConnection) {
  Service service;
  for (const std::string& head : {"PROPFIND /items HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                                      std::string("Content-Length: 73\r\n\r\n"),
                                  "POST /items HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " +
                                      std::string(9000, 'a') + "\r\nContent-Length: 73\r\n\r\n"}) {
    Smuggled answered = smuggle(service, head, "\r\n\r\n");
    EXPECT_TRUE(answered.closed) << answered.answers;
    EXPECT_EQ(answered.answers.rfind("HTTP/1.1 4", 0), 0u) << answered.answers;
    EXPECT_EQ(answered.answers.find("smuggled"), std::string::npos) << answered.answers;
  }
  EXPECT_FALSE(service.smuggledRan());
}

// A service's error pages replace the limiter's answer body; the connection still ends.
TEST(RequestBody, ARefusalRewrittenByTheServicesErrorHandlerStillEndsTheConnection) {
  Service service(/*error_pages=*/true);
  const size_t length = std::string(kSmuggled).size();
  spend(service, "198.51.100.3");
  Smuggled refused = smuggle(service, postHead("198.51.100.3", length, ""), "</h1>");
  EXPECT_TRUE(refused.closed) << refused.answers;
  EXPECT_EQ(refused.answers.rfind("HTTP/1.1 429", 0), 0u) << refused.answers;
  EXPECT_NE(refused.answers.find("<h1>429</h1>"), std::string::npos) << refused.answers;
  EXPECT_FALSE(service.smuggledRan());
}

// A request whose body was read keeps its connection, and one without a body too, after a 429
// as well: a keep-alive client's next request on it is answered.
TEST(RequestBody, ARequestWhoseBodyWasReadOrWithoutOneKeepsTheConnection) {
  Service service;
  Connection connection(service.port());
  ASSERT_TRUE(connection.send(postHead("198.51.100.4", 2, "") + "ab"));
  ASSERT_EQ(responses(connection.readUntil("\r\n\r\nok")), 1u);
  const std::string get =
      "GET /items HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 198.51.100.4\r\n\r\n";
  ASSERT_TRUE(connection.send(get));
  EXPECT_NE(connection.readUntil("\"violated-policies\"").find("HTTP/1.1 429"), std::string::npos);
  ASSERT_TRUE(connection.send(get));
  EXPECT_EQ(responses(connection.readUntil("\"violated-policies\"", 30'000, 2)), 3u);
  EXPECT_FALSE(connection.closedWithin(200)) << connection.received();
}

}  // namespace
}  // namespace floodgate::http
