// SPDX-License-Identifier: MIT
// ScrapeConnection: one client of the ScrapeServer: the request head it is sending, the
// answer going back, and when it must be done by. A request with a body, a bad one, one
// past the head cap or, on a loopback address, one whose Host is a name
// (isAddressOrLocalhost) is answered and the connection closed; a kept connection (HTTP/1.1)
// starts over after each answer. Not thread-safe: the server's one thread drives it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "daemon/request_head.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {

// What a path answers.
struct ScrapeAnswer {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
};

struct ScrapeLimits {
  size_t max_connections = 128;
  size_t max_head_bytes = 8192;
  // From accept (or a kept connection's last answer) to the last byte of the answer sent.
  std::chrono::milliseconds deadline{10000};
};

// The whole HTTP/1.1 response for `answer`; `extra` header lines end in "\r\n".
std::string httpResponse(const ScrapeAnswer& answer, bool with_body, bool keep_alive,
                         const std::string& extra = {});

class ScrapeConnection {
 public:
  using Clock = std::chrono::steady_clock;
  // The response to a complete head that has no body (the server's routes).
  using Answerer = std::function<std::string(const RequestHead&)>;

  // `answer` and `limits` are the server's, and outlive the connection. `order` is its place
  // among the oldest (lowest first).
  ScrapeConnection(UniqueFd fd, const Answerer& answer, const ScrapeLimits& limits, uint64_t order,
                   Clock::time_point now);

  int fd() const { return fd_.get(); }
  uint64_t order() const { return order_; }
  Clock::time_point deadline() const { return deadline_; }
  // When bytes of an answer last went out on it, or it began (accepted, or a kept
  // connection started over): a client that stopped reading its answer stops here.
  Clock::time_point moved() const { return moved_; }
  // Whether an answer is on its way (made, not yet all sent).
  bool sending() const { return answered_ && !draining_; }
  // What to poll for: writing an answer made, or reading more (or the client's close).
  short events() const;

  // Reads what is waiting, and makes the answer once the request is whole. False when the
  // connection is done with (the client closed it, or the read failed).
  bool read();
  // Sends what the socket takes of an answer made, if there is one. False when the send
  // failed. Once it is sent, a kept connection starts over as a new one (`next_order`
  // taken, its deadline from `now`); another is shut for writing and read until the
  // client's close, for a second at most.
  bool write(Clock::time_point now, uint64_t& next_order);

 private:
  // Answers the request `in_` holds, if it holds one whole (or one that cannot be answered).
  void process();
  // An answer after which the connection is closed, whatever was asked.
  void refuse(int status, const std::string& why);

  UniqueFd fd_;
  const Answerer* answer_;
  const ScrapeLimits* limits_;
  uint64_t order_;
  Clock::time_point deadline_;
  Clock::time_point moved_;
  std::string in_;
  std::string out_;
  size_t sent_ = 0;
  bool answered_ = false;    // `out_` holds the whole answer
  bool keep_alive_ = false;  // once it is sent, the next request is read
  size_t head_length_ = 0;   // of the request answered, to drop from `in_` after
  bool draining_ = false;    // the last answer is sent; reading until the client closes
  bool checks_host_;         // it came in on loopback: a Host that is a name is refused
};

}  // namespace floodgate::daemon
