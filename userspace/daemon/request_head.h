// SPDX-License-Identifier: MIT
// readRequestHead: what an HTTP/1.x request head read so far asks for. The metrics endpoint
// answers GET (and HEAD) of a path and needs nothing else of a request but whether the
// connection is kept and which host it was sent to: other headers are skipped, and a head
// that is not one is refused rather than guessed at.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace floodgate::daemon {

struct RequestHead {
  enum class State { kIncomplete, kComplete, kBad };
  State state = State::kIncomplete;
  std::string method;  // as sent: "GET"
  std::string path;    // the target without its query: "/metrics"
  // Whether the client keeps the connection for another request: HTTP/1.1 unless it sent
  // "Connection: close", HTTP/1.0 only when it sent "Connection: keep-alive".
  bool keep_alive = false;
  size_t length = 0;  // bytes of the head, its blank line included (kComplete)
  // A Content-Length other than 0, or a Transfer-Encoding: the request has a body, which
  // the endpoint does not read, so it is refused rather than left to be read as the next
  // request on the connection.
  bool has_body = false;
  // The Host header's value, trimmed and in lower case; none when the client sent none (HTTP/1.0).
  // A second Host header makes the head bad.
  std::optional<std::string> host;
};

// Reads `bytes`, all a connection sent so far. Complete once the blank line after the
// headers has arrived ("\r\n\r\n", or "\n\n" from a lax client); bad as soon as the request
// line is complete and is not METHOD SP /TARGET SP HTTP/1.x.
RequestHead readRequestHead(std::string_view bytes);

// Whether a Host header's value names the server by address or as localhost: an IPv4
// address, an IPv6 address in brackets, or `localhost`, each with an optional :PORT. A page
// that rebinds its own DNS name to 127.0.0.1 (DNS rebinding) can make a browser connect to
// the endpoint, but the browser sends that name, which is none of these.
bool isAddressOrLocalhost(std::string_view host);

}  // namespace floodgate::daemon
