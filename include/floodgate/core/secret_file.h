// SPDX-License-Identifier: MIT
// The fleet's shared secret, read from a file whose permissions keep it secret. Apart from
// the signing (fleet_secret.h) so that reading the config needs no crypto library.
#pragma once

#include <string>

#include "floodgate/common/result.h"

namespace floodgate::http {

// A secret shorter than this is refused: it would be guessable.
constexpr size_t kMinFleetSecretBytes = 16;

// The secret in `path` (surrounding whitespace trimmed). `field` names the config setting in
// errors ("http.escalate.secret_file"). An error that says how to make one when the file
// cannot be read, is shorter than kMinFleetSecretBytes, or every user may read it.
Result<std::string> loadFleetSecret(const std::string& path, const std::string& field);

// The password in `path` for a Redis that asks for one (requirepass, or an ACL user's),
// read with the same checks as a secret but any length; `field` names the setting.
Result<std::string> loadRedisPassword(const std::string& path, const std::string& field);

// The secret of http.escalate.secret_file, which signs offender reports.
Result<std::string> loadReportSecret(const std::string& path);

}  // namespace floodgate::http
