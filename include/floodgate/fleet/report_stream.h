// SPDX-License-Identifier: MIT
// Offender reports through a Redis stream (http.escalate.redis_stream), for a fleet whose
// services run on other hosts than the controllers; fleet ban records (fleet.bans.stream,
// floodgate/report/ban_record.h) are signed the same way. Each report is one stream entry:
//   report    "offender 198.51.100.7 rejections=50 within_ms=10000" (the socket's line)
//   reporter  "HOST:PID" of the service
//   time_ms   the service's wall clock when it reported
//   mac       hex HMAC-SHA256 of the three above, keyed by the fleet's shared secret
// Anyone who can write to the stream can add entries; only a holder of the secret can
// make one the controller acts on. The signed time_ms, checked against Redis's own clock,
// decides how old a report is (never the entry's ID, which a writer may choose); the
// controller refuses an entry it has seen before (a copy added again).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "floodgate/common/result.h"
#include "floodgate/core/policy.h"
#include "floodgate/fleet/fleet_secret.h"
#include "floodgate/redis/client.h"

namespace floodgate::http {

// A secret shorter than this is refused: it would be guessable.
constexpr size_t kMinReportSecretBytes = kMinFleetSecretBytes;
// How far a report's signed time may be ahead of Redis's clock (clock skew between hosts).
constexpr int64_t kReportClockSkewMs = 60'000;
// The latest signed time an entry may hold, in ms since 1970 (the year 3000): every check of
// an entry's time adds to it or subtracts from it, and a time no host signs must not
// overflow them, even before the signature is checked.
constexpr int64_t kMaxReportTimeMs = 32'503'680'000'000;
// The stream is trimmed to about this many entries on every add (XADD MAXLEN ~).
constexpr int64_t kReportStreamMaxLen = 100'000;

// How reporters and controllers reach the stream: the servers of http.store, with more
// time per call than a rate-limit decision gets (a report is not on a request's path).
redis::ClientOptions reportClientOptions(const StoreConfig& store);

struct StreamReport {
  std::string line;
  std::string reporter;
  int64_t time_ms = 0;
  std::string mac;
};

// The report of `line` from `reporter` at `time_ms`, signed with `secret`.
StreamReport signStreamReport(std::string_view secret, std::string line, std::string reporter,
                              int64_t time_ms);

// XADD of `report` to `stream`, trimming the stream to about kReportStreamMaxLen entries.
redis::Command streamAddCommand(const std::string& stream, const StreamReport& report);

// The report in an entry's field list (the [field, value, ...] array XREAD returns); a
// usage error naming what is missing otherwise, or a time_ms outside 0..kMaxReportTimeMs.
Result<StreamReport> streamReportFromFields(const redis::Reply& fields);

// Whether `report` is signed with `secret` (its time not looked at).
bool streamReportSigned(std::string_view secret, const StreamReport& report);

// Whether `report` is signed with `secret` and was signed no later than `now_ms` (Redis's
// clock) + kReportClockSkewMs and no earlier than `now_ms` - `max_age_ms` - the skew. The
// error says which failed and how to fix it.
Status checkStreamReport(std::string_view secret, const StreamReport& report, int64_t now_ms,
                         int64_t max_age_ms);

}  // namespace floodgate::http
