// SPDX-License-Identifier: MIT
// A hiredis connection: connect and pipeline with the time left before a deadline.
#include "floodgate/redis/connection.h"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "floodgate/redis/host_resolver.h"

namespace floodgate::http::redis {

namespace {

// What is left of `deadline`, at least 1 ms: hiredis treats a zero timeout as "none".
timeval remaining(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      deadline - std::chrono::steady_clock::now());
  int64_t us = std::max<int64_t>(1000, left.count());
  return timeval{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
}

// A connection keeps the buffer of its pipelines up to this size.
constexpr size_t kKeepBufferBytes = 64 * 1024;

// RESP, the protocol's request form: "*<argc>\r\n", then "$<length>\r\n<bytes>\r\n" per
// argument. Formatted here into a buffer the connection keeps, rather than by hiredis
// (which formats each command into a fresh buffer with printf-like code).
void appendCount(std::string& out, char kind, size_t count) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), count);
  out.push_back(kind);
  out.append(digits, end);
  out.append("\r\n", 2);
}

void appendCommand(std::string& out, const Command& command) {
  appendCount(out, '*', command.size());
  for (const std::string& arg : command) {
    appendCount(out, '$', arg.size());
    out.append(arg);
    out.append("\r\n", 2);
  }
}

Reply copyReply(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
      out.type = Reply::Type::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = Reply::Type::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::Type::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(copyReply(r->element[i]));
      break;
    default:
      out.type = Reply::Type::kNil;
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::open(const Address& address, Deadline deadline,
                                                     const Credentials& credentials) {
  const bool unix_socket = !address.unix_path.empty();
  redisContext* c = nullptr;
  if (unix_socket) {
    c = redisConnectUnixWithTimeout(address.unix_path.c_str(), remaining(deadline));
  } else {
    // hiredis would look a name up itself, with no bound on how long that takes
    Result<std::string> numeric = HostResolver::shared().resolve(address.host, deadline);
    if (!numeric) return Error::failure("redis " + address.text() + ": " + numeric.error().message);
    c = redisConnectWithTimeout(numeric->c_str(), address.port, remaining(deadline));
  }
  if (c == nullptr) return Error::failure("redis " + address.text() + ": out of memory");
  if (c->err != 0) {
    std::string why = c->errstr;
    redisFree(c);
    if (!unix_socket) HostResolver::shared().refresh(address.host);
    return Error::failure("redis " + address.text() + ": cannot connect: " + why);
  }
  // Small requests and replies, one at a time: never wait to coalesce them (hiredis sets
  // it on TCP connections too; not left to the version installed).
  int one = 1;
  if (!unix_socket) setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  auto connection = std::unique_ptr<Connection>(new Connection(address, c));
  connection->arm(deadline);
  if (credentials.password.empty()) return connection;
  Command auth = {"AUTH"};
  if (!credentials.username.empty()) auth.push_back(credentials.username);
  auth.push_back(credentials.password);
  auto replies = connection->pipeline({auth}, deadline);
  if (!replies) return replies.error();
  if ((*replies)[0].isError()) {
    return Error::failure("redis " + address.text() + " refused the login (" + (*replies)[0].str +
                          "): give its password (requirepass, or its ACL user's) in "
                          "password_file, and the user in username for an ACL user");
  }
  return connection;
}

void Connection::arm(Deadline deadline) {
  int64_t left_us = std::chrono::duration_cast<std::chrono::microseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
  // Within a millisecond of what is armed is close enough: re-arming is two system calls,
  // and calls of one client come with about the same time left.
  if (armed_us_ >= 0 && std::abs(left_us - armed_us_) <= kArmSlackUs) return;
  redisSetTimeout(context_, remaining(deadline));
  armed_us_ = std::max<int64_t>(1000, left_us);
}

Connection::~Connection() { redisFree(context_); }

Error Connection::fail(const std::string& what) {
  broken_ = true;
  std::string why = context_->err != 0 ? context_->errstr : "connection lost";
  // hiredis reports a socket timeout as an I/O error with EAGAIN's text.
  if (why.find("temporarily unavailable") != std::string::npos) {
    why = "timed out";
    timed_out_ = true;
  }
  return Error::failure("redis " + address_.text() + ": " + what + ": " + why);
}

Result<std::optional<Reply>> Connection::receive(Deadline deadline) {
  if (broken_) return Error::failure("redis " + address_.text() + ": connection is broken");
  while (true) {
    void* raw = nullptr;
    // A reply may already sit in hiredis's buffer, read along with an earlier one.
    if (redisGetReplyFromReader(context_, &raw) != REDIS_OK) return fail("bad reply");
    if (raw != nullptr) {
      auto* reply = static_cast<redisReply*>(raw);
      Reply out = copyReply(reply);
      freeReplyObject(reply);
      return std::optional<Reply>(std::move(out));
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::optional<Reply>();
    // poll, not a socket timeout: hiredis marks a context that timed out as failed for good
    pollfd p{context_->fd, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) return fail("poll");
    if (n > 0 && redisBufferRead(context_) != REDIS_OK) return fail("read");
  }
}

Result<void> Connection::sendAll(Deadline deadline) {
  size_t sent = 0;
  while (sent < out_.size()) {
    arm(deadline);
    // MSG_NOSIGNAL: to a server that died, a write() would raise SIGPIPE, which would kill
    // the service; this way it is an error (EPIPE) like any other.
    ssize_t n = ::send(context_->fd, out_.data() + sent, out_.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    broken_ = true;
    timed_out_ = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    std::string why = n == 0                                      ? "connection lost"
                      : (errno == EAGAIN || errno == EWOULDBLOCK) ? "timed out"
                                                                  : std::strerror(errno);
    return Error::failure("redis " + address_.text() + ": cannot send: " + why);
  }
  return {};
}

Result<std::vector<Reply>> Connection::pipeline(const std::vector<Command>& commands,
                                                Deadline deadline) {
  return pipeline(std::vector<const std::vector<Command>*>{&commands}, deadline);
}

Result<std::vector<Reply>> Connection::pipeline(
    const std::vector<const std::vector<Command>*>& groups, Deadline deadline) {
  for (const std::vector<Command>* commands : groups) append(*commands);
  return exchange(deadline);
}

void Connection::append(const std::vector<Command>& commands) {
  for (const Command& command : commands) appendCommand(out_, command);
  appended_ += commands.size();
}

Result<std::vector<Reply>> Connection::exchange(Deadline deadline) {
  const size_t count = appended_;
  appended_ = 0;
  if (broken_) {
    out_.clear();
    return Error::failure("redis " + address_.text() + ": connection is broken");
  }
  auto sent = sendAll(deadline);
  out_.clear();
  if (!sent) return sent.error();
  // A rare large pipeline (a batch of syncs) need not stay allocated on an idle connection.
  if (out_.capacity() > kKeepBufferBytes) std::string().swap(out_);
  std::vector<Reply> replies;
  replies.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    void* raw = nullptr;
    // Replies usually arrive in one read: one already read needs no wait.
    if (redisGetReplyFromReader(context_, &raw) != REDIS_OK) return fail("bad reply");
    while (raw == nullptr) {
      if (std::chrono::steady_clock::now() >= deadline) {
        broken_ = true;
        timed_out_ = true;
        return Error::failure("redis " + address_.text() + ": timed out");
      }
      // SO_RCVTIMEO bounds the blocking read by what is left (see arm()).
      arm(deadline);
      if (redisBufferRead(context_) != REDIS_OK) return fail("no reply");
      if (redisGetReplyFromReader(context_, &raw) != REDIS_OK) return fail("bad reply");
    }
    auto* reply = static_cast<redisReply*>(raw);
    replies.push_back(copyReply(reply));
    freeReplyObject(reply);
  }
  return replies;
}

}  // namespace floodgate::http::redis
