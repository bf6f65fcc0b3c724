// SPDX-License-Identifier: MIT
// RedisConnection: one blocking hiredis connection that pipelines commands under a deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "floodgate/common/result.h"
#include "floodgate/core/redis_address.h"

struct redisContext;

namespace floodgate::http::redis {

using Deadline = std::chrono::steady_clock::time_point;

// A reply, copied out of hiredis so it can outlive the connection.
struct Reply {
  enum class Type { kNil, kInteger, kString, kStatus, kError, kArray };
  Type type = Type::kNil;
  int64_t integer = 0;
  std::string str;  // kString, kStatus, kError
  std::vector<Reply> elements;

  bool isError() const { return type == Type::kError; }
  // An error reply whose text starts with `prefix` ("NOSCRIPT", "MOVED", ...).
  bool isError(std::string_view prefix) const {
    return isError() && std::string_view(str).starts_with(prefix);
  }
};

// One command's arguments, binary-safe.
using Command = std::vector<std::string>;

// Who a connection logs in as on a Redis that asks (requirepass, or an ACL user): nothing
// sent when the password is empty; the username only for an ACL user.
struct Credentials {
  std::string username;
  std::string password;

  bool operator==(const Credentials&) const = default;
};

// Not thread-safe: a pool hands each connection to one thread at a time. After an I/O
// error or a timeout the connection is broken for good (a late reply would be read as the
// answer to the next command), and the pool drops it.
class Connection {
 public:
  // Connects before `deadline`, and logs in with `credentials` if they hold a password.
  static Result<std::unique_ptr<Connection>> open(const Address& address, Deadline deadline,
                                                  const Credentials& credentials = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends every command in one write and reads their replies in order, all before
  // `deadline`. Redis error replies are replies; only transport failures are Errors.
  Result<std::vector<Reply>> pipeline(const std::vector<Command>& commands, Deadline deadline);
  // The same for several callers' commands, one group after another in one write; the
  // replies of every group, in the same order, in one vector.
  Result<std::vector<Reply>> pipeline(const std::vector<const std::vector<Command>*>& groups,
                                      Deadline deadline);
  // The same in two steps: `append` formats commands into the next write (copying them, so
  // that their owner may go), `exchange` sends all appended and reads their replies.
  void append(const std::vector<Command>& commands);
  Result<std::vector<Reply>> exchange(Deadline deadline);

  // Pub/sub: waits for one reply pushed by the server (after a SUBSCRIBE) until `deadline`;
  // nullopt when none came, and the connection stays usable (unlike a pipeline timeout).
  Result<std::optional<Reply>> receive(Deadline deadline);

  bool broken() const { return broken_; }
  // Broken by a deadline that passed, not by the server or the network: the server may be
  // merely slow, and the pool's other connections to it are likely fine.
  bool timedOut() const { return timed_out_; }
  const Address& address() const { return address_; }

 private:
  Connection(Address address, redisContext* context)
      : address_(std::move(address)), context_(context) {}
  Error fail(const std::string& what);
  // Arms the socket's send and receive timeouts with what is left before `deadline`
  // (SO_SNDTIMEO, SO_RCVTIMEO), unless what is armed is within kArmSlackUs of it: a
  // pipeline ends by its deadline give or take a millisecond.
  void arm(Deadline deadline);
  Result<void> sendAll(Deadline deadline);  // sends out_

  static constexpr int64_t kArmSlackUs = 1000;
  Address address_;
  redisContext* context_;
  bool broken_ = false;
  bool timed_out_ = false;
  size_t appended_ = 0;    // commands in out_
  int64_t armed_us_ = -1;  // the socket timeouts armed, in µs; -1 none yet
  std::string out_;        // the commands of a pipeline, in RESP, reused
};

}  // namespace floodgate::http::redis
