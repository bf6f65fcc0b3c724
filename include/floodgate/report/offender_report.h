// SPDX-License-Identifier: MIT
// The offender report's line, which a service writes (OffenderReporter) and the controller
// reads (its report socket and stream reader):
//   offender 198.51.100.7 rejections=50 within_ms=10000
//   offender 2001:db8:1:2::/64 rejections=50 within_ms=10000
// Over the socket it is one datagram ending in a newline; in a Redis stream it is the
// signed `report` field (floodgate/fleet/report_stream.h). Neither end owns the format.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"

namespace floodgate::report {

struct OffenderReport {
  Cidr address;  // an address, or an IPv6 prefix (a client keyed by its /64)
  int64_t rejections = 0;
  int64_t within_ms = 0;
};

// The line reporting `client_key` (an address or an IPv6 prefix, as text), without a newline.
std::string formatReport(std::string_view client_key, int64_t rejections, int64_t within_ms);

// Parses "offender ADDRESS rejections=N within_ms=N" (ADDRESS may be a prefix such as
// 2001:db8:1:2::/64; a trailing newline is fine); a usage error naming what is wrong
// otherwise. An IPv4-mapped address (::ffff:198.51.100.7) is read as the IPv4 one.
Result<OffenderReport> parseReport(std::string_view text);

}  // namespace floodgate::report
