// SPDX-License-Identifier: MIT
// Parsing HOST:PORT and unix:/PATH.
#include "floodgate/core/redis_address.h"

#include <charconv>

namespace floodgate::http::redis {

namespace {

// sun_path holds 108 bytes, the last a NUL.
constexpr size_t kMaxUnixPathBytes = 107;

}  // namespace

Result<Address> Address::parse(const std::string& text) {
  if (text.starts_with("unix:")) {
    Address a;
    a.unix_path = text.substr(5);
    if (a.unix_path.empty() || a.unix_path.front() != '/') {
      return Error::usage("'" + text + "': a Unix socket must be an absolute path, e.g. " +
                          "unix:/run/redis/redis.sock");
    }
    if (a.unix_path.size() > kMaxUnixPathBytes || a.unix_path.find('\0') != std::string::npos) {
      return Error::usage("'" + text + "': a Unix socket's path must be at most " +
                          std::to_string(kMaxUnixPathBytes) + " bytes, without NUL");
    }
    a.host.clear();
    a.port = 0;
    return a;
  }
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return Error::usage("'" + text + "' must be HOST:PORT or unix:/PATH, e.g. 127.0.0.1:6379");
  }
  Address a;
  a.host = text.substr(0, colon);
  if (a.host.front() == '[' && a.host.back() == ']') a.host = a.host.substr(1, a.host.size() - 2);
  const char* begin = text.data() + colon + 1;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, a.port);
  if (ec != std::errc() || ptr != end || a.port < 1 || a.port > 65535) {
    return Error::usage("'" + text + "': the port must be 1-65535");
  }
  return a;
}

}  // namespace floodgate::http::redis
