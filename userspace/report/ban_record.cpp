// SPDX-License-Identifier: MIT
// Writing and reading the fleet ban record's line.
#include "floodgate/report/ban_record.h"

#include <charconv>
#include <cstdio>
#include <optional>
#include <random>

#include "floodgate/common/text.h"
#include "line_words.h"

namespace floodgate::report {
namespace {

constexpr const char* kShape =
    "a ban record is 'ban v1 ADDRESS expires_ms=N kind=manual|escalation|rule nonce=HEX'";

std::optional<BanKind> kindNamed(std::string_view name) {
  for (BanKind kind : {BanKind::kManual, BanKind::kEscalation, BanKind::kRule}) {
    if (name == banKindName(kind)) return kind;
  }
  return std::nullopt;
}

bool isNonce(std::string_view text) {
  if (text.empty() || text.size() > 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

const char* banKindName(BanKind kind) {
  switch (kind) {
    case BanKind::kManual:
      return "manual";
    case BanKind::kEscalation:
      return "escalation";
    case BanKind::kRule:
      return "rule";
  }
  return "manual";
}

std::string banNonce() {
  std::random_device random;  // the kernel's source (getrandom) on Linux
  const uint64_t value = (static_cast<uint64_t>(random()) << 32) | random();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(value));
  return hex;
}

std::string formatBanRecord(const BanRecord& record) {
  return "ban v" + std::to_string(kBanRecordVersion) + " " + record.address.toString() +
         " expires_ms=" + std::to_string(record.expires_ms) + " kind=" + banKindName(record.kind) +
         " nonce=" + record.nonce;
}

Result<BanRecord> parseBanRecord(std::string_view text) {
  const std::vector<std::string_view> words = lineWords(text);
  if (words.size() < 2 || words[0] != "ban") return Error::usage(kShape);
  const std::string version = "v" + std::to_string(kBanRecordVersion);
  if (words[1] != version) {
    return Error::usage("a ban record of version '" + printable(words[1], 80) +
                        "': this floodgate reads " + version +
                        " only (upgrade it to the version the fleet publishes)");
  }
  if (words.size() != 6) return Error::usage(kShape);
  auto address = parseCidr(words[2]);
  if (!address) {
    return Error::usage("'" + printable(words[2], 80) + "' is not an IP address or prefix; " +
                        kShape);
  }
  auto expires = fieldValue(words[3], "expires_ms");
  std::optional<std::string_view> kind_name = fieldText(words[4], "kind");
  std::optional<std::string_view> nonce = fieldText(words[5], "nonce");
  if (!expires || !kind_name || !nonce) return Error::usage(kShape);
  auto kind = kindNamed(*kind_name);
  if (!kind) {
    return Error::usage("kind '" + printable(*kind_name, 80) +
                        "' is not manual, escalation or rule; " + kShape);
  }
  if (!isNonce(*nonce))
    return Error::usage("the nonce must be 1 to 64 hex digits; " + std::string(kShape));
  return BanRecord{*address, *expires, *kind, std::string(*nonce)};
}

}  // namespace floodgate::report
