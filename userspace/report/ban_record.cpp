// SPDX-License-Identifier: MIT
// Writing and reading the fleet ban and lift records' lines.
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
constexpr const char* kLiftShape = "a lift record is 'unban v1 ADDRESS nonce=HEX'";

// An error unless `word` is the version this code reads; `what` names the record.
Status checkVersion(std::string_view word, const char* what) {
  const std::string version = "v" + std::to_string(kBanRecordVersion);
  if (word == version) return okStatus();
  return Error::usage(std::string("a ") + what + " of version '" + printable(word, 80) +
                      "': this floodgate reads " + version +
                      " only (upgrade it to the version the fleet publishes)");
}

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

// A record's ADDRESS word; an IPv4-mapped one (::ffff:a.b.c.d, as a host on a dual-stack
// socket may write it) is the IPv4 address its packets carry, which the fleet's guards judge.
Result<Cidr> recordAddress(std::string_view word, const char* shape) {
  auto address = parseCidr(word);
  if (!address) {
    return Error::usage("'" + printable(word, 80) + "' is not an IP address or prefix; " + shape);
  }
  return mappedIpv4(*address).value_or(*address);
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
  if (Status s = checkVersion(words[1], "ban record"); !s) return s.error();
  if (words.size() != 6) return Error::usage(kShape);
  auto address = recordAddress(words[2], kShape);
  if (!address) return address.error();
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
  // a rule bans the source its packets carried: an IPv6 frame from ::ffff:a.b.c.d is
  // anyone's to send, and read as a.b.c.d it would ban that IPv4 client; no floodgate
  // publishes one
  if (*kind == BanKind::kRule && address->family == Family::kV4 &&
      words[2].find(':') != std::string_view::npos) {
    return Error::usage("a rule's ban of an IPv4-mapped address ('" + printable(words[2], 80) +
                        "') is refused: it names an IPv6 source anyone can forge, and read as "
                        "IPv4 it would ban that client; upgrade the floodgate that published it");
  }
  return BanRecord{*address, *expires, *kind, std::string(*nonce)};
}

std::string formatLiftRecord(const LiftRecord& record) {
  return "unban v" + std::to_string(kBanRecordVersion) + " " + record.address.toString() +
         " nonce=" + record.nonce;
}

Result<LiftRecord> parseLiftRecord(std::string_view text) {
  const std::vector<std::string_view> words = lineWords(text);
  if (words.size() < 2 || words[0] != "unban") return Error::usage(kLiftShape);
  if (Status s = checkVersion(words[1], "lift record"); !s) return s.error();
  if (words.size() != 4) return Error::usage(kLiftShape);
  auto address = recordAddress(words[2], kLiftShape);
  if (!address) return address.error();
  std::optional<std::string_view> nonce = fieldText(words[3], "nonce");
  if (!nonce) return Error::usage(kLiftShape);
  if (!isNonce(*nonce))
    return Error::usage("the nonce must be 1 to 64 hex digits; " + std::string(kLiftShape));
  return LiftRecord{*address, std::string(*nonce)};
}

bool isLiftRecord(std::string_view text) {
  const std::vector<std::string_view> words = lineWords(text);
  return !words.empty() && words[0] == "unban";
}

}  // namespace floodgate::report
