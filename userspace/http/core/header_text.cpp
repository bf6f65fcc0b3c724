// SPDX-License-Identifier: MIT
// HTTP header text helpers.
#include "floodgate/core/header_text.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace floodgate::http {

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

namespace {

// The 6 bits base64 character `c` stands for: with `url` in the URL-safe alphabet (RFC 4648
// section 5), else in the standard one; -1 for any other character.
int base64Digit(char c, bool url) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == (url ? '-' : '+')) return 62;
  if (c == (url ? '_' : '/')) return 63;
  return -1;
}

// Whether Bearer `credentials` are a JWS or JWE in compact form (RFC 7515, 7516): 3 or 5
// segments joined by dots, the first a JOSE header, a JSON object. The header is read as
// leniently as any decoder might (either alphabet, every other character skipped), so no
// spelling a JWT library takes for the token passes for an opaque token: its first byte is
// '{'. An opaque token of that shape (PASETO's `v4.public.…`, say) starts otherwise.
bool isCompactJose(std::string_view credentials) {
  const size_t segments = std::count(credentials.begin(), credentials.end(), '.') + 1;
  if (segments != 3 && segments != 5) return false;
  uint32_t bits = 0;
  int held = 0;
  for (char c : credentials.substr(0, credentials.find('.'))) {
    int digit = base64Digit(c, true);
    if (digit < 0) digit = base64Digit(c, false);
    if (digit < 0) continue;
    bits = (bits << 6) | static_cast<uint32_t>(digit);
    held += 6;
    if (held >= 8) return ((bits >> (held - 8)) & 0xff) == '{';
  }
  return false;
}

// Whether every segment of compact-form `credentials` is canonical base64url. An empty
// segment (an unsigned JWS's signature, a JWE's key under direct encryption) is canonical.
bool segmentsAreCanonical(std::string_view credentials) {
  for (;;) {
    const size_t dot = credentials.find('.');
    if (!isCanonicalBase64(credentials.substr(0, dot), true)) return false;
    if (dot == std::string_view::npos) return true;
    credentials.remove_prefix(dot + 1);
  }
}

}  // namespace

bool isCanonicalBase64(std::string_view text, bool url) {
  size_t digits = text.size();
  if (!url) {
    if (text.size() % 4 != 0) return false;
    while (digits > 0 && text.size() - digits < 2 && text[digits - 1] == '=') --digits;
  }
  if (digits % 4 == 1) return false;  // a lone character holds no whole byte
  for (size_t i = 0; i < digits; ++i) {
    if (base64Digit(text[i], url) < 0) return false;
  }
  if (digits % 4 == 0) return true;
  // 2 characters of a last group hold one byte and 4 bits more, 3 hold two and 2 bits more
  const int unused_bits = digits % 4 == 2 ? 0xf : 0x3;
  return (base64Digit(text[digits - 1], url) & unused_bits) == 0;
}

std::optional<std::string> headerKey(std::string_view name, std::string_view value) {
  value = trimOws(value);
  if (!equalsIgnoreCase(name, "Authorization") && !equalsIgnoreCase(name, "Proxy-Authorization")) {
    return std::string(value);
  }
  const size_t scheme_end = std::min(value.find_first_of(" \t"), value.size());
  std::string key;
  key.reserve(value.size());
  for (char c : value.substr(0, scheme_end)) {
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  const std::string_view credentials = trimOws(value.substr(scheme_end));
  if (!credentials.empty()) {
    key += ' ';
    // Servers decode Basic credentials and JWTs with decoders that disagree on any other
    // spelling than the canonical one (Boost.Beast's stops at the first '=' or character
    // outside the alphabet, Python's skips them, some read '-' as '+'), so the canonical
    // spelling is the only one a key can be charged for. Other tokens are looked up by
    // their text, so their text is their key.
    if (key == "basic " && !isCanonicalBase64(credentials, false)) return std::nullopt;
    if (key == "bearer " && isCompactJose(credentials) && !segmentsAreCanonical(credentials)) {
      return std::nullopt;
    }
    key += credentials;
  }
  return key;
}

}  // namespace floodgate::http
