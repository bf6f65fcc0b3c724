// SPDX-License-Identifier: MIT
// One poll loop over the listener and every connection; each connection reads its request
// head, is answered in full from memory, and is closed once the answer is sent, at its
// deadline, or to make room for a newer one.
#include "daemon/scrape_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <vector>

#include "daemon/log.h"
#include "daemon/request_head.h"

namespace floodgate::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// How long a connection whose answer is sent is read on for the client's close: closing
// with its bytes unread would send a reset that can cut the answer short.
constexpr auto kLinger = std::chrono::seconds(1);
// How long the listener rests when the process is out of descriptors or memory.
constexpr auto kRest = std::chrono::milliseconds(100);
// Connections taken from the listener per loop turn, so a connect flood cannot starve the
// ones already open.
constexpr int kAcceptsPerTurn = 64;

struct Connection {
  UniqueFd fd;
  uint64_t order = 0;  // accept order: the lowest is the oldest
  Clock::time_point deadline;
  std::string in;
  std::string out;
  size_t sent = 0;
  bool answered = false;    // `out` holds the whole answer
  bool keep_alive = false;  // once it is sent, the next request is read
  size_t head_length = 0;   // of the request answered, to drop from `in` after
  bool draining = false;    // the last answer is sent; reading until the client closes
};

const char* reasonOf(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

std::string response(const ScrapeAnswer& answer, bool with_body, bool keep_alive,
                     const std::string& extra = {}) {
  std::string out = "HTTP/1.1 " + std::to_string(answer.status) + " " + reasonOf(answer.status) +
                    "\r\nContent-Type: " + answer.content_type +
                    "\r\nContent-Length: " + std::to_string(answer.body.size()) + "\r\n" + extra +
                    (keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n");
  if (with_body) out += answer.body;
  return out;
}

ScrapeAnswer plain(int status, const std::string& body) { return {status, "text/plain", body}; }

Result<UniqueFd> bindListener(const ListenAddress& address) {
  const std::string where = address.host + ":" + std::to_string(address.port);
  const Error taken = Error::failure(
      "cannot listen for metrics on " + where +
      " (in use, or not an address of this host): choose another with --metrics-listen");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found) != 0) return taken;
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, freeaddrinfo);
  for (const addrinfo* at = found; at != nullptr; at = at->ai_next) {
    UniqueFd fd(socket(at->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    // SO_REUSEADDR but not SO_REUSEPORT: a second daemon on the port must fail its start,
    // not split the scrapes with this one.
    int yes = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    // an answer goes out in one write; without this its tail could wait for a delayed ACK
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    if (bind(fd.get(), at->ai_addr, at->ai_addrlen) == 0 && listen(fd.get(), 128) == 0) {
      return fd;
    }
  }
  return taken;
}

uint16_t boundPort(int fd) {
  sockaddr_storage bound{};
  socklen_t size = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) != 0) return 0;
  if (bound.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
}

}  // namespace

Result<std::unique_ptr<ScrapeServer>> ScrapeServer::start(const ListenAddress& address,
                                                          std::map<std::string, ScrapeRoute> routes,
                                                          ScrapeLimits limits) {
  auto listener = bindListener(address);
  if (!listener) return listener.error();
  std::unique_ptr<ScrapeServer> out(new ScrapeServer());
  out->listener_ = std::move(*listener);
  out->stop_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!out->stop_.valid()) {
    return Error::failure(std::string("cannot create an eventfd: ") + std::strerror(errno));
  }
  out->port_ = boundPort(out->listener_.get());
  out->routes_ = std::move(routes);
  out->limits_ = limits;
  out->thread_ = std::thread([server = out.get()] { server->serve(); });
  return out;
}

ScrapeServer::~ScrapeServer() {
  const uint64_t one = 1;
  if (write(stop_.get(), &one, sizeof(one)) != sizeof(one)) {
    logError("cannot stop the metrics server: " + std::string(std::strerror(errno)));
  }
  if (thread_.joinable()) thread_.join();
}

void ScrapeServer::serve() {
  std::vector<Connection> connections;
  uint64_t accepted = 0;
  std::vector<pollfd> polled;

  // The answer to a complete head: only GET and HEAD of a known path.
  const auto answer = [this](const RequestHead& head) {
    const bool get = head.method == "GET";
    if (!get && head.method != "HEAD") {
      return response(plain(405, "only GET and HEAD are answered\n"), true, head.keep_alive,
                      "Allow: GET, HEAD\r\n");
    }
    auto route = routes_.find(head.path);
    if (route == routes_.end()) return response(plain(404, "not found\n"), get, head.keep_alive);
    try {
      return response(route->second(), get, head.keep_alive);
    } catch (const std::exception& e) {
      logError("metrics: " + head.path + " failed: " + e.what());
      return response(plain(500, "internal error\n"), get, head.keep_alive);
    }
  };

  // An answer after which the connection is closed, whatever was asked.
  const auto refuse = [](Connection& connection, int status, const std::string& why) {
    connection.out = response(plain(status, why), true, false);
    connection.keep_alive = false;
    connection.answered = true;
  };

  // Answers the request `in` holds, if it holds one whole (or one that cannot be answered).
  const auto process = [&](Connection& connection) {
    // over the cap is refused even when complete: the cap is on what is read, not waited for
    if (connection.in.size() > limits_.max_head_bytes) {
      refuse(connection, 431, "request head too large\n");
      return;
    }
    const RequestHead head = readRequestHead(connection.in);
    if (head.state == RequestHead::State::kIncomplete) return;
    if (head.state == RequestHead::State::kBad) {
      refuse(connection, 400, "not an HTTP/1.x request\n");
    } else if (head.has_body) {
      // not read, a body would be taken for the next request (smuggled past a proxy)
      refuse(connection, 400, "a request with a body is not answered here\n");
    } else {
      connection.out = answer(head);
      connection.keep_alive = head.keep_alive;
      connection.head_length = head.length;
      connection.answered = true;
    }
  };

  // Reads what is waiting; false when the connection is done with (closed, or failed).
  const auto readFrom = [&](Connection& connection) {
    char buffer[16384];
    const ssize_t n = recv(connection.fd.get(), buffer, sizeof(buffer), 0);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    if (connection.draining || connection.answered) return true;
    const size_t old_size = connection.in.size();
    connection.in.append(buffer, static_cast<size_t>(n));
    // A head read a byte at a time is parsed again only when it may have become complete or
    // bad: its first line ended, or a blank line may have (the last bytes and these).
    const size_t first_end = connection.in.find('\n');
    const std::string_view fresh =
        std::string_view(connection.in).substr(old_size >= 2 ? old_size - 2 : 0);
    if (connection.in.size() > limits_.max_head_bytes ||
        (first_end != std::string::npos && first_end >= old_size) ||
        fresh.find("\n\n") != std::string_view::npos ||
        fresh.find("\n\r\n") != std::string_view::npos) {
      process(connection);
    }
    return true;
  };

  // Sends what the socket takes; false when the connection failed. A kept connection then
  // starts over as a new one (its deadline and its place among the oldest), so a scraper's
  // connection lasts as long as it scrapes.
  const auto writeTo = [&](Connection& connection, Clock::time_point now) {
    const ssize_t n = send(connection.fd.get(), connection.out.data() + connection.sent,
                           connection.out.size() - connection.sent, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    connection.sent += static_cast<size_t>(n);
    if (connection.sent < connection.out.size()) return true;
    connection.out = std::string();
    connection.sent = 0;
    if (!connection.keep_alive) {
      shutdown(connection.fd.get(), SHUT_WR);
      connection.draining = true;
      connection.deadline = std::min(connection.deadline, now + kLinger);
      return true;
    }
    connection.in.erase(0, connection.head_length);
    connection.answered = false;
    connection.order = accepted++;
    connection.deadline = now + limits_.deadline;
    process(connection);  // a request sent behind the last one
    return true;
  };

  // Out of descriptors (EMFILE), the listener stays readable with nothing to accept: it
  // rests until then instead of waking every poll.
  Clock::time_point listen_again{};
  for (;;) {
    polled.clear();
    polled.push_back({stop_.get(), POLLIN, 0});
    const bool listening = Clock::now() >= listen_again;
    polled.push_back({listener_.get(), static_cast<short>(listening ? POLLIN : 0), 0});
    Clock::time_point next_deadline = listening ? Clock::time_point::max() : listen_again;
    for (const Connection& connection : connections) {
      const bool sending = connection.answered && !connection.draining;
      polled.push_back({connection.fd.get(), static_cast<short>(sending ? POLLOUT : POLLIN), 0});
      next_deadline = std::min(next_deadline, connection.deadline);
    }
    int timeout_ms = -1;
    if (next_deadline != Clock::time_point::max()) {
      const auto left = next_deadline - Clock::now();
      // rounded up: a poll that wakes a little early would only go round again
      timeout_ms = static_cast<int>(
          std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(left).count()));
    }
    if (poll(polled.data(), polled.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      // ENOMEM: the next turn may do; the endpoint must not go deaf while still bound
      logError("metrics: poll failed: " + std::string(std::strerror(errno)));
      std::this_thread::sleep_for(kRest);
      continue;
    }
    if (polled[0].revents != 0) return;
    const Clock::time_point now = Clock::now();

    // connections first, by their index in `polled` (those accepted below were not polled)
    std::vector<bool> keep(connections.size(), true);
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& connection = connections[i];
      const short events = polled[i + 2].revents;
      if ((events & POLLIN) != 0) keep[i] = readFrom(connection);
      // an answer made just now is sent at once: most fit the socket's buffer
      if (keep[i] && connection.answered && !connection.draining) {
        keep[i] = writeTo(connection, now);
      }
      if ((events & (POLLERR | POLLNVAL)) != 0) keep[i] = false;
      if ((events & POLLHUP) != 0 && (events & POLLIN) == 0) keep[i] = false;
      if (now >= connection.deadline) keep[i] = false;
    }
    size_t kept = 0;
    for (size_t i = 0; i < connections.size(); ++i) {
      if (!keep[i]) continue;
      if (kept != i) connections[kept] = std::move(connections[i]);  // never onto itself
      ++kept;
    }
    connections.resize(kept);

    if ((polled[1].revents & POLLIN) == 0) continue;
    for (int turn = 0; turn < kAcceptsPerTurn; ++turn) {
      UniqueFd fd(accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!fd.valid()) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          listen_again = now + kRest;
        }
        break;  // EAGAIN: none left (or a connection that failed meanwhile)
      }
      if (connections.size() >= limits_.max_connections) {
        // the oldest makes room: a client that sends its request at once is never it
        auto oldest = std::min_element(
            connections.begin(), connections.end(),
            [](const Connection& a, const Connection& b) { return a.order < b.order; });
        connections.erase(oldest);
      }
      Connection connection;
      connection.fd = std::move(fd);
      connection.order = accepted++;
      connection.deadline = now + limits_.deadline;
      connections.push_back(std::move(connection));
    }
  }
}

}  // namespace floodgate::daemon
