// SPDX-License-Identifier: MIT
// httpGetIn: an HTTP GET to a server listening inside a network namespace (from a thread
// that enters it, so the test process stays where it is).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace floodgate::test {

struct HttpReply {
  int status = 0;  // 0: no connection
  std::string body;
  std::string content_type;
};

// GET http://127.0.0.1:PORT/TARGET in `netns` (a /run/netns path), with a 2-second timeout.
HttpReply httpGetIn(const std::string& netns, int port, const std::string& target);

// GET http://HOST:PORT/TARGET in `netns` from the local address `source` (empty: the
// kernel picks it), with a timeout of `timeout_s` seconds for connecting and reading, and
// `headers` sent as given.
HttpReply httpGetFrom(const std::string& netns, const std::string& source, const std::string& host,
                      int port, const std::string& target, int timeout_s = 2,
                      const std::vector<std::pair<std::string, std::string>>& headers = {});

// Percent-encodes a query parameter value.
std::string urlEncode(const std::string& value);

}  // namespace floodgate::test
