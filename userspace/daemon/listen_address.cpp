// SPDX-License-Identifier: MIT
// parseListenAddress: split at the last colon, brackets around an IPv6 host removed.
#include "daemon/listen_address.h"

#include <charconv>

namespace floodgate::daemon {

Result<ListenAddress> parseListenAddress(const std::string& text) {
  auto bad = [&] {
    return Error::usage("--metrics-listen '" + text +
                        "' is not ADDR:PORT (e.g. 127.0.0.1:9477 or [::1]:9477)");
  };
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return bad();
  ListenAddress out;
  out.host = text.substr(0, colon);
  if (out.host.front() == '[') {
    if (out.host.size() < 3 || out.host.back() != ']') return bad();
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  unsigned port = 0;
  auto [end, ec] = std::from_chars(first, last, port);
  if (ec != std::errc() || end != last || port > 65535) return bad();
  out.port = static_cast<uint16_t>(port);
  return out;
}

}  // namespace floodgate::daemon
