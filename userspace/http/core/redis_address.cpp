// SPDX-License-Identifier: MIT
// Parsing HOST:PORT.
#include "floodgate/core/redis_address.h"

#include <charconv>

namespace floodgate::http::redis {

Result<Address> Address::parse(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return Error::usage("'" + text + "' must be HOST:PORT, e.g. 127.0.0.1:6379");
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
