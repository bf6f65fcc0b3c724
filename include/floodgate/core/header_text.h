// SPDX-License-Identifier: MIT
// Small helpers for HTTP header text (RFC 9110): optional whitespace and case-insensitive
// names and tokens.
#pragma once

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
// `Bearer T`, `bearer T` and `BEARER  T` are one key, not three buckets for one token; and
// Basic credentials and JWTs (a Bearer token of 3 or 5 base64url segments) as the bytes
// the most lenient decoders read, encoded again one way, so no spelling of one secret that
// such a decoder reads alike (padding, characters outside the alphabet, text after the
// padding, the last character's unused bits) is a bucket of its own.
std::string headerKey(std::string_view name, std::string_view value);

}  // namespace floodgate::http
