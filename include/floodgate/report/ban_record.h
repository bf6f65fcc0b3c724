// SPDX-License-Identifier: MIT
// The fleet ban record's line: a ban one host made, for every host of the fleet to apply
// until the same moment. Written by `floodgate ban add` and `floodgate run`, read by
// `floodgate run`, always inside a signed stream entry (floodgate/fleet/report_stream.h):
//   ban v1 198.51.100.7 expires_ms=1764625200000 kind=manual nonce=5f0c2a9e1b7d4c38
// The version follows the kind, so a reader meets a record it cannot read as exactly
// that, and an offender-report reader (which takes only `offender ...`) refuses it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"

namespace floodgate::report {

// The one version of the record this code writes and reads.
constexpr int kBanRecordVersion = 1;

// What started a shared ban on the host that published it.
enum class BanKind { kManual, kEscalation, kRule };

// "manual", "escalation", "rule".
const char* banKindName(BanKind kind);

struct BanRecord {
  Cidr address;            // an address or a prefix
  int64_t expires_ms = 0;  // when the ban ends, Unix time in ms (absolute, not a duration)
  BanKind kind = BanKind::kManual;
  std::string nonce;  // hex, unique per record: two bans alike are still two records
};

// A fresh nonce: 16 hex digits from the kernel's random source.
std::string banNonce();

// The record's line, without a newline.
std::string formatBanRecord(const BanRecord& record);

// Parses the line formatBanRecord writes. A usage error naming what is wrong otherwise;
// a record of another version says which, and that this floodgate reads only version 1.
Result<BanRecord> parseBanRecord(std::string_view text);

}  // namespace floodgate::report
