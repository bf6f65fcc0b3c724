// SPDX-License-Identifier: MIT
// The address of one Redis server, as the `http.store` section names it. Apart from the
// connection so that reading the config needs no Redis client.
#pragma once

#include <string>

#include "floodgate/common/result.h"

namespace floodgate::http::redis {

// host:port of one Redis server, or the path of its Unix socket.
struct Address {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_path = {};  // when not empty, the server's Unix socket (host and port unused)

  std::string text() const {
    return unix_path.empty() ? host + ":" + std::to_string(port) : "unix:" + unix_path;
  }
  bool operator==(const Address&) const = default;
  // "HOST:PORT" (the host may be a name or an address; "[::1]:6379" for IPv6), or
  // "unix:/PATH" (an absolute path, at most 107 bytes: a Unix socket's limit).
  static Result<Address> parse(const std::string& text);
};

}  // namespace floodgate::http::redis
