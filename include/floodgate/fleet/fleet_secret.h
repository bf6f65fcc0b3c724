// SPDX-License-Identifier: MIT
// The HMAC-SHA256 the fleet's shared secret (secret_file.h) signs with: what offender reports
// (report_stream.h) and policy documents published to Redis (policy_document.h) both use.
#pragma once

#include <string>
#include <string_view>

#include "floodgate/core/secret_file.h"

namespace floodgate::http {

// Lower-case hex HMAC-SHA256 of `message` keyed by `secret`.
std::string hmacSha256Hex(std::string_view secret, std::string_view message);

// Whether a MAC someone gave equals the one computed, in time independent of where they
// differ (so a forger cannot find the right MAC a byte at a time).
bool macMatches(std::string_view given, std::string_view expected);

}  // namespace floodgate::http
