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

namespace floodgate::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// How long the listener rests when the process is out of descriptors or memory.
constexpr auto kRest = std::chrono::milliseconds(100);
// Connections taken from the listener per loop turn, so a connect flood cannot starve the
// ones already open.
constexpr int kAcceptsPerTurn = 64;

ScrapeAnswer plain(int status, const std::string& body) { return {status, "text/plain", body}; }

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

Result<UniqueFd> ScrapeServer::openListener(const ListenAddress& address) {
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

Result<std::unique_ptr<ScrapeServer>> ScrapeServer::start(const ListenAddress& address,
                                                          std::map<std::string, ScrapeRoute> routes,
                                                          ScrapeLimits limits) {
  auto listener = openListener(address);
  if (!listener) return listener.error();
  return start(std::move(*listener), std::move(routes), limits);
}

Result<std::unique_ptr<ScrapeServer>> ScrapeServer::start(UniqueFd listener,
                                                          std::map<std::string, ScrapeRoute> routes,
                                                          ScrapeLimits limits) {
  std::unique_ptr<ScrapeServer> out(new ScrapeServer());
  out->listener_ = std::move(listener);
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

namespace {

// The connection that makes room for a new one. The oldest of those not being sent an
// answer while those being sent are at most half of `cap`: a client that sends its request
// at once is never it, nor is a scraper reading a large answer while a flood of connections
// comes in (cut short, the whole scrape would fail). Past half, answers that are not read
// would leave too little room for new connections to be read at all, so the one whose bytes
// moved longest ago goes, whatever it is doing: a client that asked and stopped reading
// (it would hold its place to its deadline) before a scraper still reading its answer,
// however long ago that one connected.
std::vector<ScrapeConnection>::iterator evictionVictim(std::vector<ScrapeConnection>& connections,
                                                       size_t cap) {
  const auto sending =
      static_cast<size_t>(std::count_if(connections.begin(), connections.end(),
                                        [](const ScrapeConnection& c) { return c.sending(); }));
  if (sending * 2 <= cap) {
    return std::min_element(connections.begin(), connections.end(),
                            [](const ScrapeConnection& a, const ScrapeConnection& b) {
                              if (a.sending() != b.sending()) return !a.sending();
                              return a.order() < b.order();
                            });
  }
  return std::min_element(connections.begin(), connections.end(),
                          [](const ScrapeConnection& a, const ScrapeConnection& b) {
                            if (a.moved() != b.moved()) return a.moved() < b.moved();
                            return a.order() < b.order();
                          });
}

}  // namespace

void ScrapeServer::serve() {
  // The answer to a complete head: only GET and HEAD of a known path.
  const ScrapeConnection::Answerer answer = [this](const RequestHead& head) {
    const bool get = head.method == "GET";
    if (!get && head.method != "HEAD") {
      return httpResponse(plain(405, "only GET and HEAD are answered\n"), true, head.keep_alive,
                          "Allow: GET, HEAD\r\n");
    }
    auto route = routes_.find(head.path);
    if (route == routes_.end()) {
      return httpResponse(plain(404, "not found\n"), get, head.keep_alive);
    }
    try {
      return httpResponse(route->second(), get, head.keep_alive);
    } catch (const std::exception& e) {
      logError("metrics: " + head.path + " failed: " + e.what());
      return httpResponse(plain(500, "internal error\n"), get, head.keep_alive);
    }
  };
  std::vector<ScrapeConnection> connections;
  uint64_t next_order = 0;
  std::vector<pollfd> polled;
  // Out of descriptors (EMFILE), the listener stays readable with nothing to accept: it
  // rests until then instead of waking every poll.
  Clock::time_point listen_again{};
  for (;;) {
    polled.clear();
    polled.push_back({stop_.get(), POLLIN, 0});
    const bool listening = Clock::now() >= listen_again;
    polled.push_back({listener_.get(), static_cast<short>(listening ? POLLIN : 0), 0});
    Clock::time_point next_deadline = listening ? Clock::time_point::max() : listen_again;
    for (const ScrapeConnection& connection : connections) {
      polled.push_back({connection.fd(), connection.events(), 0});
      next_deadline = std::min(next_deadline, connection.deadline());
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
      ScrapeConnection& connection = connections[i];
      const short events = polled[i + 2].revents;
      if ((events & POLLIN) != 0) keep[i] = connection.read();
      // an answer made just now is sent at once: most fit the socket's buffer
      if (keep[i]) keep[i] = connection.write(now, next_order);
      if ((events & (POLLERR | POLLNVAL)) != 0) keep[i] = false;
      if ((events & POLLHUP) != 0 && (events & POLLIN) == 0) keep[i] = false;
      if (now >= connection.deadline()) keep[i] = false;
    }
    size_t kept = 0;
    for (size_t i = 0; i < connections.size(); ++i) {
      if (!keep[i]) continue;
      if (kept != i) connections[kept] = std::move(connections[i]);  // never onto itself
      ++kept;
    }
    connections.erase(connections.begin() + static_cast<std::ptrdiff_t>(kept), connections.end());

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
        connections.erase(evictionVictim(connections, limits_.max_connections));
      }
      connections.emplace_back(std::move(fd), answer, limits_, next_order++, now);
    }
  }
}

}  // namespace floodgate::daemon
