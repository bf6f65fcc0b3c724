// SPDX-License-Identifier: MIT
// Small helpers for HTTP header text (RFC 9110): optional whitespace and case-insensitive
// names and tokens.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace floodgate::http {

// `s` without leading and trailing spaces and tabs (OWS).
std::string_view trimOws(std::string_view s);

// Whether `a` and `b` are equal ignoring ASCII case.
bool equalsIgnoreCase(std::string_view a, std::string_view b);

// The key a `key: header:NAME` policy charges for one line `value` of header `name`: the
// value without OWS, and for Authorization and Proxy-Authorization the credentials as a
// server reads them (RFC 9110 11.4: a case-insensitive scheme, then one or more spaces), so
// `Bearer T`, `bearer T` and `BEARER  T` are one key, not three buckets for one token.
// Nothing when the credentials are Basic ones (RFC 7617), or a Bearer JWT (a JWS or JWE in
// compact form), not in canonical base64 (see isCanonicalBase64): decoders differ on such a
// spelling (one skips a character outside the alphabet, another stops at it), so it names
// no one key, and each spelling of one secret would otherwise be a quota of its own.
std::optional<std::string> headerKey(std::string_view name, std::string_view value);

// Whether `text` is base64 exactly as a strict encoder writes it (RFC 4648), the only
// spelling of its bytes: with `url`, the URL-safe alphabet without padding (RFC 7515's
// base64url); else the standard alphabet, padded to whole groups of 4. The bits of the last
// character beyond the last whole byte are zero. Empty text is the spelling of no bytes.
bool isCanonicalBase64(std::string_view text, bool url);

}  // namespace floodgate::http
