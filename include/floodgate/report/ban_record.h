// SPDX-License-Identifier: MIT
// The fleet ban record's line: a ban one host made, for every host of the fleet to apply
// until the same moment, and the lift record's line: the end of every ban of one prefix,
// for every host to apply at once. Written by `floodgate ban add|del --config` and
// `floodgate run`, read by `floodgate run`, always inside a signed stream entry
// (floodgate/fleet/report_stream.h):
//   ban v1 198.51.100.7 expires_ms=1764625200000 kind=manual nonce=5f0c2a9e1b7d4c38
//   unban v1 198.51.100.7 nonce=9d3e71c0a4b2f685
// The version follows the kind, so a reader meets a record it cannot read as exactly
// that, and an offender-report reader (which takes only `offender ...`) refuses it. A
// reader refuses any other version because it cannot know what more or less such a record
// bans or lifts, and guessing either wrong is what a forger would want.
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

// The lift of every ban of exactly `address` (not of a prefix inside or around it).
struct LiftRecord {
  Cidr address;
  std::string nonce;  // hex, unique per record: a lift repeated later is a record of its own
};

// A fresh nonce: 16 hex digits from the kernel's random source.
std::string banNonce();

// The record's line, without a newline.
std::string formatBanRecord(const BanRecord& record);

// Parses the line formatBanRecord writes. A usage error naming what is wrong otherwise;
// a record of another version says which, and that this floodgate reads only version 1.
// An IPv4-mapped address (::ffff:198.51.100.7) is read as the IPv4 one.
Result<BanRecord> parseBanRecord(std::string_view text);

// The lift record's line, without a newline.
std::string formatLiftRecord(const LiftRecord& record);

// Parses the line formatLiftRecord writes, with the same errors as parseBanRecord.
Result<LiftRecord> parseLiftRecord(std::string_view text);

// Whether `text` is a lift record's line (its first word is `unban`), well formed or not:
// which of the two parsers to ask.
bool isLiftRecord(std::string_view text);

}  // namespace floodgate::report
