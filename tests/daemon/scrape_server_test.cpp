// SPDX-License-Identifier: MIT
// ScrapeServer on loopback: what it answers, and that no client holds up another: slow
// request heads, a client that never reads its answer, a silent connection.
#include "daemon/scrape_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace floodgate::daemon {
namespace {

// A client connection to the server on `host` (an IPv4 address); reads wait at most a minute.
// `receive_buffer`: the socket's, set before it connects (0: the kernel's, which grows).
UniqueFd connectTo(uint16_t port, const char* host = "127.0.0.1", int receive_buffer = 0) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (receive_buffer != 0) {
    setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  }
  timeval minute{60, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &minute, sizeof(minute));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, host, &address.sin_addr);
  EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  return fd;
}

void sendAll(int fd, const std::string& bytes) {
  EXPECT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

// Everything the server sends until it closes.
std::string readToClose(int fd) {
  std::string out;
  char buffer[65536];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

// `size` bytes from the server, or fewer if it closes (or a read waits a minute) first.
std::string readExactly(int fd, size_t size) {
  std::string out;
  char buffer[65536];
  while (out.size() < size) {
    const ssize_t n = recv(fd, buffer, std::min(sizeof(buffer), size - out.size()), 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

std::string ask(uint16_t port, const std::string& request) {
  UniqueFd fd = connectTo(port);
  sendAll(fd.get(), request);
  return readToClose(fd.get());
}

// Whether the server closed `fd` (an end of file or a reset), without waiting.
bool closedByServer(int fd) {
  char byte;
  const ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

std::map<std::string, ScrapeRoute> routes() {
  std::map<std::string, ScrapeRoute> out;
  out["/metrics"] = [] { return ScrapeAnswer{200, "text/plain; version=0.0.4", "up 1\n"}; };
  out["/healthz"] = [] { return ScrapeAnswer{503, "text/plain", "eth0: not attached\n"}; };
  out["/big"] = [] { return ScrapeAnswer{200, "text/plain", std::string(16 << 20, 'x')}; };
  return out;
}

ListenAddress anyLoopbackPort() { return ListenAddress{"127.0.0.1", 0}; }

TEST(ScrapeServer, AnswersGetAndHeadOfItsRoutesAndClosesEachConnection) {
  ScrapeLimits limits;
  limits.max_head_bytes = 1024;
  auto server = ScrapeServer::start(anyLoopbackPort(), routes(), limits);
  ASSERT_TRUE(server.ok()) << server.error().message;
  const uint16_t port = (*server)->port();
  ASSERT_NE(port, 0);

  EXPECT_EQ(ask(port, "GET /metrics?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: "
            "5\r\nConnection: close\r\n\r\nup 1\n");
  EXPECT_EQ(ask(port, "HEAD /metrics HTTP/1.0\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: "
            "5\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ask(port, "GET /healthz HTTP/1.0\r\n\r\n").substr(0, 36),
            "HTTP/1.1 503 Service Unavailable\r\nCo");
  EXPECT_EQ(ask(port, "GET /nothing HTTP/1.0\r\n\r\n").substr(0, 24), "HTTP/1.1 404 Not Found\r\n");
  const std::string post = ask(port, "POST /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(post.substr(0, 33), "HTTP/1.1 405 Method Not Allowed\r\n");
  EXPECT_NE(post.find("\r\nAllow: GET, HEAD\r\n"), std::string::npos) << post;
  EXPECT_EQ(ask(port, "\x16\x03\x01 hello\n").substr(0, 26), "HTTP/1.1 400 Bad Request\r\n");
  EXPECT_EQ(
      ask(port, "GET /metrics HTTP/1.1\r\nX: " + std::string(2000, 'a') + "\r\n\r\n").substr(0, 46),
      "HTTP/1.1 431 Request Header Fields Too Large\r\n");

  // Prometheus's scrape names the target it was given: the address and port
  const std::string prometheus =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
      "\r\nUser-Agent: Prometheus/2.45.3\r\nAccept: text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
      "Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n"
      "Connection: close\r\n\r\n";
  EXPECT_EQ(ask(port, prometheus).substr(0, 17), "HTTP/1.1 200 OK\r\n");
  for (const char* host : {"localhost:9477", "[::1]:9477"}) {
    EXPECT_EQ(ask(port, "GET /healthz HTTP/1.1\r\nHost: " + std::string(host) +
                            "\r\nConnection: close\r\n\r\n")
                  .substr(0, 34),
              "HTTP/1.1 503 Service Unavailable\r\n")
        << host;
  }
  // a page whose name was rebound to 127.0.0.1 (DNS rebinding) reads nothing, and is told
  // what to ask for
  const std::string rebound =
      ask(port, "GET /metrics HTTP/1.1\r\nHost: rebind.example:9477\r\n\r\n");
  EXPECT_EQ(rebound.substr(0, 34), "HTTP/1.1 421 Misdirected Request\r\n") << rebound;
  EXPECT_NE(rebound.find("Connection: close\r\n\r\non a loopback address, Host must be an IP "
                         "address or localhost: ask for this endpoint by its address"),
            std::string::npos)
      << rebound;
  EXPECT_EQ(rebound.find("up 1"), std::string::npos) << rebound;
}

// On an address other than loopback a Prometheus elsewhere may scrape by name, and is
// answered; a browser on this host that a page rebound to 127.0.0.1 is not. The server
// listens on 0.0.0.0 in a network namespace of the test's own, whose loopback also holds
// 198.51.100.7: an address that is not a loopback one.
TEST(ScrapeServer, AHostNameIsRefusedOnlyOnALoopbackAddress) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace of its own";
  if (std::system("command -v ip >/dev/null") != 0) GTEST_SKIP() << "needs ip (iproute2)";
  // A network namespace is a thread's: the test's own thread (and the server's, started from
  // it) move to a new one, and the rest of the binary stays where it was.
  std::thread([] {
    ASSERT_EQ(unshare(CLONE_NEWNET), 0) << std::strerror(errno);
    ASSERT_EQ(std::system("ip link set lo up && ip addr add 198.51.100.7/32 dev lo"), 0);
    auto server = ScrapeServer::start(ListenAddress{"0.0.0.0", 0}, routes(), ScrapeLimits{});
    ASSERT_TRUE(server.ok()) << server.error().message;
    const uint16_t port = (*server)->port();
    const std::string by_name =
        "GET /metrics HTTP/1.1\r\nHost: edge01.example:9477\r\nConnection: close\r\n\r\n";

    UniqueFd other = connectTo(port, "198.51.100.7");
    sendAll(other.get(), by_name);
    const std::string answered = readToClose(other.get());
    EXPECT_EQ(answered.substr(0, 17), "HTTP/1.1 200 OK\r\n") << answered;

    UniqueFd loopback = connectTo(port, "127.0.0.1");
    sendAll(loopback.get(), by_name);
    const std::string refused = readToClose(loopback.get());
    EXPECT_EQ(refused.substr(0, 34), "HTTP/1.1 421 Misdirected Request\r\n") << refused;
  }).join();
}

// A server on loopback holding at most `connections`, whose deadline no test outlasts.
Result<std::unique_ptr<ScrapeServer>> startCapped(size_t connections) {
  ScrapeLimits limits;
  limits.max_connections = connections;
  limits.deadline = std::chrono::minutes(10);
  return ScrapeServer::start(anyLoopbackPort(), routes(), limits);
}

// Slowloris: connections that send part of a request and wait. With the connections at
// their cap, each new one closes the oldest of those still waiting for their request, so a
// request sent at once is always answered, and a client that never reads a large answer
// holds no one up either; nor is an answer on its way cut short by the flood of connections
// (a scraper reading a large answer slowly gets all of it).
TEST(ScrapeServer, SlowAndStalledClientsDoNotHoldUpARequestSentAtOnce) {
  auto server = startCapped(16);
  ASSERT_TRUE(server.ok()) << server.error().message;
  const uint16_t port = (*server)->port();

  UniqueFd stalled = connectTo(port);  // asks for 16 MiB and never reads it
  sendAll(stalled.get(), "GET /big HTTP/1.1\r\n\r\n");
  char first;  // its answer has begun: it is being sent
  ASSERT_EQ(recv(stalled.get(), &first, 1, MSG_PEEK), 1);
  std::vector<UniqueFd> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(connectTo(port));
    sendAll(slow.back().get(), "GET /metr");
  }
  EXPECT_EQ(ask(port, "GET /metrics HTTP/1.0\r\n\r\n").substr(0, 17), "HTTP/1.1 200 OK\r\n");

  // 42 connections through a cap of 16: the oldest 26 of those waiting for their request
  // went, the newest 14 slow ones are still held open, and so is the one being answered
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(closedByServer(slow[i].get()), i < 26) << "slow connection " << i;
  }
  const std::string head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(16 << 20) +
      "\r\nConnection: keep-alive\r\n\r\n";
  EXPECT_EQ(readExactly(stalled.get(), head.size() + (16 << 20)).size(), head.size() + (16 << 20))
      << "the answer it asked for, whole";
}

// A client with a small receive buffer (8 KiB, as the kernel doubles 4 KiB), whose unread
// answer stalls at once rather than filling megabytes of buffers first.
UniqueFd connectSmall(uint16_t port) { return connectTo(port, "127.0.0.1", 4096); }

// Clients that ask for an answer and never read it, past half the cap: a new connection
// then closes the one whose bytes moved longest ago, one of theirs, not the scraper that
// connected first and is still reading its answer.
TEST(ScrapeServer, PastHalfTheCapInAnswersNotReadTheScraperStillReadingIsKept) {
  auto server = startCapped(8);
  ASSERT_TRUE(server.ok()) << server.error().message;
  const uint16_t port = (*server)->port();

  UniqueFd scraper = connectSmall(port);
  sendAll(scraper.get(), "GET /big HTTP/1.0\r\n\r\n");
  char first;
  ASSERT_EQ(recv(scraper.get(), &first, 1, MSG_PEEK), 1);
  std::vector<UniqueFd> stalled;  // 7: the cap, every one being sent an answer
  for (int i = 0; i < 7; ++i) {
    stalled.push_back(connectSmall(port));
    sendAll(stalled.back().get(), "GET /big HTTP/1.0\r\n\r\n");
    ASSERT_EQ(recv(stalled.back().get(), &first, 1, MSG_PEEK), 1) << i;
  }
  // more than the server's send buffer can hold (4 MiB at most here): bytes went out to the
  // scraper after the stalled ones' last
  const size_t head =
      std::string("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                  std::to_string(16 << 20) + "\r\nConnection: close\r\n\r\n")
          .size();
  ASSERT_EQ(readExactly(scraper.get(), 5 << 20).size(), size_t{5 << 20});

  EXPECT_EQ(ask(port, "GET /metrics HTTP/1.0\r\n\r\n").substr(0, 17), "HTTP/1.1 200 OK\r\n");
  EXPECT_EQ(readToClose(scraper.get()).size(), head + (16 << 20) - (5 << 20))
      << "the rest of the answer it asked for";
  // one of the stalled ones made room: its answer is cut short, the others come whole
  int cut = 0;
  for (const UniqueFd& fd : stalled) cut += readToClose(fd.get()).size() < head + (16 << 20);
  EXPECT_EQ(cut, 1);
}

// A scraper keeps its connection (HTTP/1.1): each request is answered on it, those sent
// back to back too, until it asks for the close.
TEST(ScrapeServer, AKeptConnectionIsAnsweredRequestAfterRequest) {
  auto server = ScrapeServer::start(anyLoopbackPort(), routes());
  ASSERT_TRUE(server.ok()) << server.error().message;
  UniqueFd fd = connectTo((*server)->port());
  const std::string answer =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: "
      "5\r\nConnection: keep-alive\r\n\r\nup 1\n";
  sendAll(fd.get(), "GET /metrics HTTP/1.1\r\n\r\n");
  std::string got(answer.size(), '\0');
  ASSERT_EQ(recv(fd.get(), got.data(), got.size(), MSG_WAITALL),
            static_cast<ssize_t>(answer.size()));
  EXPECT_EQ(got, answer);
  // two more in one send, the last asking for the close
  sendAll(fd.get(),
          "GET /metrics HTTP/1.1\r\n\r\nHEAD /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
  std::string closing = answer.substr(0, answer.size() - 5);
  closing.replace(closing.find("keep-alive"), 10, "close");
  EXPECT_EQ(readToClose(fd.get()), answer + closing);
}

// Requests pipelined on a kept connection, 19 KiB of them in one send, are each held to the
// head cap on their own: every one is answered, none refused as too large.
TEST(ScrapeServer, PipelinedRequestsPastTheHeadCapTogetherAreEachAnswered) {
  ScrapeLimits limits;
  limits.max_head_bytes = 1024;
  auto server = ScrapeServer::start(anyLoopbackPort(), routes(), limits);
  ASSERT_TRUE(server.ok()) << server.error().message;
  UniqueFd fd = connectTo((*server)->port());
  const std::string request =
      "GET /metrics HTTP/1.1\r\nX-Padding: " + std::string(162, 'p') + "\r\n\r\n";  // 200 bytes
  std::string batch;
  for (int i = 0; i < 99; ++i) batch += request;
  batch += "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n";
  ASSERT_GT(batch.size(), 16u * 1024);  // more than one read takes, too
  sendAll(fd.get(), batch);
  const std::string answers = readToClose(fd.get());
  size_t ok = 0;
  for (size_t at = answers.find("HTTP/1.1 200 OK\r\n"); at != std::string::npos;
       at = answers.find("HTTP/1.1 200 OK\r\n", at + 1)) {
    ++ok;
  }
  EXPECT_EQ(ok, 100u) << answers.substr(0, 400);
  EXPECT_EQ(answers.find(" 431 "), std::string::npos);
}

// Nothing sent after a request the server does not read in full may be taken for a next
// request (smuggled past a proxy that reuses the connection): a request with a body, and
// one refused as bad, are answered 400 and the connection closed.
TEST(ScrapeServer, ARequestWithABodyOrABadOneEndsTheConnection) {
  auto server = ScrapeServer::start(anyLoopbackPort(), routes());
  ASSERT_TRUE(server.ok()) << server.error().message;
  const uint16_t port = (*server)->port();
  const auto answers = [](const std::string& text) {
    size_t count = 0;
    for (size_t at = text.find("HTTP/1.1 "); at != std::string::npos;
         at = text.find("HTTP/1.1 ", at + 1)) {
      ++count;
    }
    return count;
  };
  for (const char* body :
       {"Content-Length: 25\r\n", "Transfer-Encoding: chunked\r\n", "content-length :25\r\n"}) {
    const std::string got = ask(port, std::string("GET /healthz HTTP/1.1\r\n") + body +
                                          "\r\nGET /metrics HTTP/1.1\r\n\r\n");
    EXPECT_EQ(got.substr(0, 26), "HTTP/1.1 400 Bad Request\r\n") << body;
    EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
    EXPECT_EQ(answers(got), 1u) << got;
  }
  // a bad request after a kept one: 400, closed, and what follows it unanswered
  const std::string got =
      ask(port, "GET /metrics HTTP/1.1\r\n\r\nbad\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(answers(got), 2u) << got;
  EXPECT_NE(got.find("HTTP/1.1 400 Bad Request\r\n"), std::string::npos) << got;
  // a body of no length is none
  EXPECT_EQ(ask(port, "GET /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n").substr(0, 17),
            "HTTP/1.1 200 OK\r\n");
}

TEST(ScrapeServer, AConnectionThatSendsNothingIsClosedAtItsDeadline) {
  ScrapeLimits limits;
  limits.deadline = std::chrono::milliseconds(50);
  auto server = ScrapeServer::start(anyLoopbackPort(), routes(), limits);
  ASSERT_TRUE(server.ok()) << server.error().message;
  UniqueFd silent = connectTo((*server)->port());
  // readToClose waits at most a minute; the server closes it long before, whatever the timer
  EXPECT_EQ(readToClose(silent.get()), "");
  EXPECT_TRUE(closedByServer(silent.get()));
}

// The CPU time this process has used, user and system.
std::chrono::microseconds cpuUsed() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto micros = [](const timeval& t) {
    return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec);
  };
  return micros(usage.ru_utime) + micros(usage.ru_stime);
}

// Puts the process's descriptor limit back when the test ends, however it ends.
struct DescriptorLimit {
  rlimit saved{};
  DescriptorLimit() { getrlimit(RLIMIT_NOFILE, &saved); }
  ~DescriptorLimit() { setrlimit(RLIMIT_NOFILE, &saved); }
};

// Out of descriptors, accept fails (EMFILE) while the connection stays in the listener's
// queue, so the listener stays readable: the server rests instead of waking at once again
// and again, and answers the connection that waited once a descriptor is free.
TEST(ScrapeServer, OutOfDescriptorsItRestsAndThenAnswersTheConnectionThatWaited) {
  auto server = ScrapeServer::start(anyLoopbackPort(), routes());
  ASSERT_TRUE(server.ok()) << server.error().message;
  const DescriptorLimit limit;
  // every descriptor below the lowest free one is taken: with the limit just above it, the
  // client's socket is the last descriptor the process may open, and accept gets none
  const int lowest_free = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(lowest_free, 0);
  close(lowest_free);
  rlimit tight = limit.saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free) + 1;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
  UniqueFd client = connectTo((*server)->port());
  ASSERT_EQ(client.get(), lowest_free);

  const auto cpu_before = cpuUsed();
  const auto wall_before = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto cpu = cpuUsed() - cpu_before;
  const auto wall = std::chrono::steady_clock::now() - wall_before;
  // a server waking on the readable listener again and again would use a CPU for the wait;
  // resting, it wakes a few times a second, whatever the timers' resolution
  EXPECT_LT(cpu * 10, wall) << "CPU " << cpu.count() << " us over the wait";
  // and that while the process was out of descriptors: none to open, the request unanswered
  const int none = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int open_errno = errno;
  EXPECT_EQ(none, -1);
  EXPECT_EQ(open_errno, EMFILE);
  if (none >= 0) close(none);
  sendAll(client.get(), "GET /metrics HTTP/1.0\r\n\r\n");
  char byte;
  EXPECT_EQ(recv(client.get(), &byte, 1, MSG_DONTWAIT), -1) << "answered without an accept";

  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit.saved), 0);
  EXPECT_EQ(readToClose(client.get()).substr(0, 17), "HTTP/1.1 200 OK\r\n");
}

TEST(ScrapeServer, ATakenPortFailsTheStartSayingWhatToDo) {
  auto first = ScrapeServer::start(anyLoopbackPort(), routes());
  ASSERT_TRUE(first.ok()) << first.error().message;
  const ListenAddress taken{"127.0.0.1", (*first)->port()};
  auto second = ScrapeServer::start(taken, routes());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().message,
            "cannot listen for metrics on 127.0.0.1:" + std::to_string(taken.port) +
                " (in use, or not an address of this host): choose another with "
                "--metrics-listen");
}

}  // namespace
}  // namespace floodgate::daemon
