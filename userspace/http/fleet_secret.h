// SPDX-License-Identifier: MIT
// The fleet's shared secret and the HMAC-SHA256 it signs with: what offender reports
// (report_stream.h) and policy documents published to Redis (policy_document.h) both use.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace floodgate::http {

// A secret shorter than this is refused: it would be guessable.
constexpr size_t kMinFleetSecretBytes = 16;

// The secret in `path` (surrounding whitespace trimmed). `field` names the config setting in
// errors ("http.escalate.secret_file"). An error that says how to make one when the file
// cannot be read, is shorter than kMinFleetSecretBytes, or every user may read it.
Result<std::string> loadFleetSecret(const std::string& path, const std::string& field);

// Lower-case hex HMAC-SHA256 of `message` keyed by `secret`.
std::string hmacSha256Hex(std::string_view secret, std::string_view message);

// Whether a MAC someone gave equals the one computed, in time independent of where they
// differ (so a forger cannot find the right MAC a byte at a time).
bool macMatches(std::string_view given, std::string_view expected);

}  // namespace floodgate::http
