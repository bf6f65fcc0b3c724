// SPDX-License-Identifier: MIT
// A connection's request read, answered and written back, without ever blocking.
#include "daemon/scrape_connection.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <utility>

namespace floodgate::daemon {
namespace {

// How long a connection whose answer is sent is read on for the client's close: closing
// with its bytes unread would send a reset that can cut the answer short.
constexpr auto kLinger = std::chrono::seconds(1);

// Whether the connection on `fd` came in on a loopback address (127.0.0.0/8, ::1, or
// ::ffff:127.0.0.0/104 on a dual-stack listener). Only there is a Host that names a host
// refused: a browser on this host is the one a rebound page can turn on the endpoint, and no
// Prometheus elsewhere reaches it. On another address a Prometheus may well scrape by name.
bool cameInOnLoopback(int fd) {
  sockaddr_storage local{};
  socklen_t size = sizeof(local);
  // unknown (a socket already reset): treated as loopback, the stricter side
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) != 0) return true;
  if (local.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&local);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (local.ss_family == AF_INET6) {
    const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(&local)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
  }
  return true;
}

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
    case 421:
      return "Misdirected Request";
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

}  // namespace

std::string httpResponse(const ScrapeAnswer& answer, bool with_body, bool keep_alive,
                         const std::string& extra) {
  std::string out = "HTTP/1.1 " + std::to_string(answer.status) + " " + reasonOf(answer.status) +
                    "\r\nContent-Type: " + answer.content_type +
                    "\r\nContent-Length: " + std::to_string(answer.body.size()) + "\r\n" + extra +
                    (keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n");
  if (with_body) out += answer.body;
  return out;
}

ScrapeConnection::ScrapeConnection(UniqueFd fd, const Answerer& answer, const ScrapeLimits& limits,
                                   uint64_t order, Clock::time_point now)
    : fd_(std::move(fd)),
      answer_(&answer),
      limits_(&limits),
      order_(order),
      deadline_(now + limits.deadline),
      moved_(now),
      checks_host_(cameInOnLoopback(fd_.get())) {}

short ScrapeConnection::events() const { return answered_ && !draining_ ? POLLOUT : POLLIN; }

void ScrapeConnection::refuse(int status, const std::string& why) {
  out_ = httpResponse(ScrapeAnswer{status, "text/plain", why}, true, false);
  keep_alive_ = false;
  answered_ = true;
}

void ScrapeConnection::process() {
  // The cap is on the head being answered: requests a client sent behind it (pipelined on a
  // kept connection) wait in `in_` and are each held to it in turn. A head that ends past the
  // cap is refused even when complete, and one not yet complete once the cap is read.
  const RequestHead head = readRequestHead(in_);
  if (head.state == RequestHead::State::kIncomplete ? in_.size() > limits_->max_head_bytes
                                                    : head.length > limits_->max_head_bytes) {
    refuse(431, "request head too large\n");
    return;
  }
  if (head.state == RequestHead::State::kIncomplete) return;
  if (head.state == RequestHead::State::kBad) {
    refuse(400, "not an HTTP/1.x request\n");
  } else if (head.has_body) {
    // not read, a body would be taken for the next request (smuggled past a proxy)
    refuse(400, "a request with a body is not answered here\n");
  } else if (checks_host_ && head.host && !isAddressOrLocalhost(*head.host)) {
    // a browser sent it to a name rebound to loopback (DNS rebinding): the page asking must
    // not read the rules and their limits
    refuse(421,
           "on a loopback address, Host must be an IP address or localhost: ask for this "
           "endpoint by its address (as in http://127.0.0.1:9477/metrics), not by a name\n");
  } else {
    out_ = (*answer_)(head);
    keep_alive_ = head.keep_alive;
    head_length_ = head.length;
    answered_ = true;
  }
}

bool ScrapeConnection::read() {
  char buffer[16384];
  const ssize_t n = recv(fd_.get(), buffer, sizeof(buffer), 0);
  if (n == 0) return false;
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  if (draining_ || answered_) return true;
  const size_t old_size = in_.size();
  in_.append(buffer, static_cast<size_t>(n));
  // A head read a byte at a time is parsed again only when it may have become complete or
  // bad: its first line ended, or a blank line may have (the last bytes and these).
  const size_t first_end = in_.find('\n');
  const std::string_view fresh = std::string_view(in_).substr(old_size >= 2 ? old_size - 2 : 0);
  if (in_.size() > limits_->max_head_bytes ||
      (first_end != std::string::npos && first_end >= old_size) ||
      fresh.find("\n\n") != std::string_view::npos ||
      fresh.find("\n\r\n") != std::string_view::npos) {
    process();
  }
  return true;
}

bool ScrapeConnection::write(Clock::time_point now, uint64_t& next_order) {
  if (!answered_ || draining_) return true;
  const ssize_t n = send(fd_.get(), out_.data() + sent_, out_.size() - sent_, MSG_NOSIGNAL);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  sent_ += static_cast<size_t>(n);
  if (n > 0) moved_ = now;
  if (sent_ < out_.size()) return true;
  out_ = std::string();
  sent_ = 0;
  if (!keep_alive_) {
    shutdown(fd_.get(), SHUT_WR);
    draining_ = true;
    deadline_ = std::min(deadline_, now + kLinger);
    return true;
  }
  // so a scraper's connection lasts as long as it scrapes
  in_.erase(0, head_length_);
  answered_ = false;
  order_ = next_order++;
  deadline_ = now + limits_->deadline;
  process();  // a request sent behind the last one
  return true;
}

}  // namespace floodgate::daemon
