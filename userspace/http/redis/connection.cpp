// SPDX-License-Identifier: MIT
// A hiredis connection: connect and pipeline with the time left before a deadline.
#include "floodgate/redis/connection.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <signal.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>

namespace floodgate::http::redis {

namespace {

// What is left of `deadline`, at least 1 ms: hiredis treats a zero timeout as "none".
timeval remaining(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      deadline - std::chrono::steady_clock::now());
  int64_t us = std::max<int64_t>(1000, left.count());
  return timeval{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
}

// hiredis write()s to the socket: to a server that died, that raises SIGPIPE, which would
// kill the service. Block it on this thread around our I/O and swallow any that we caused,
// rather than change the whole process's signal handling from a library.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    already_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlock() {
    if (!already_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        timespec zero{0, 0};
        sigtimedwait(&pipe_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool already_pending_ = false;
};

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

Result<std::unique_ptr<Connection>> Connection::open(const Address& address, Deadline deadline) {
  redisContext* c =
      redisConnectWithTimeout(address.host.c_str(), address.port, remaining(deadline));
  if (c == nullptr) return Error::failure("redis " + address.text() + ": out of memory");
  if (c->err != 0) {
    std::string why = c->errstr;
    redisFree(c);
    return Error::failure("redis " + address.text() + ": cannot connect: " + why);
  }
  return std::unique_ptr<Connection>(new Connection(address, c));
}

Connection::~Connection() { redisFree(context_); }

Error Connection::fail(const std::string& what) {
  broken_ = true;
  std::string why = context_->err != 0 ? context_->errstr : "connection lost";
  // hiredis reports a socket timeout as an I/O error with EAGAIN's text.
  if (why.find("temporarily unavailable") != std::string::npos) why = "timed out";
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

Result<std::vector<Reply>> Connection::pipeline(const std::vector<Command>& commands,
                                                Deadline deadline) {
  if (broken_) return Error::failure("redis " + address_.text() + ": connection is broken");
  SigpipeBlock no_sigpipe;
  // SO_SNDTIMEO/SO_RCVTIMEO bound each blocking read and write; re-armed with what is left
  // before each read so the whole pipeline ends by the deadline (give or take one read).
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const Command& command : commands) {
    argv.clear();
    lengths.clear();
    for (const std::string& arg : command) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    if (redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(),
                               lengths.data()) != REDIS_OK) {
      return fail("cannot queue a command");
    }
  }
  std::vector<Reply> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    if (std::chrono::steady_clock::now() >= deadline) {
      broken_ = true;
      return Error::failure("redis " + address_.text() + ": timed out");
    }
    void* raw = nullptr;
    // Replies usually arrive in one read: one already read needs no wait, so no re-arming
    // either (two setsockopt calls per reply, most of a Redis decision's system calls).
    if (redisGetReplyFromReader(context_, &raw) != REDIS_OK) return fail("bad reply");
    if (raw == nullptr) {
      redisSetTimeout(context_, remaining(deadline));
      if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) return fail("no reply");
    }
    auto* reply = static_cast<redisReply*>(raw);
    replies.push_back(copyReply(reply));
    freeReplyObject(reply);
  }
  return replies;
}

}  // namespace floodgate::http::redis
