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

// The 6 bits base64 character `c` stands for in the standard alphabet (RFC 4648), and with
// `url` in the URL-safe one too; else -1.
int base64Digit(char c, bool url) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || (url && c == '-')) return 62;
  if (c == '/' || (url && c == '_')) return 63;
  return -1;
}

// The bytes base64 `text` holds as the most lenient decoders read them, encoded again the one
// way: the standard alphabet with padding, or with `url` (which reads the URL-safe alphabet
// too) the URL-safe one without. Lenient decoders (Python's b64decode, for one) skip every
// character outside the alphabet, stop at the padding that ends a group, and ignore the
// last character's unused bits: each of those spellings of one secret is one text here.
// Empty when `text` holds no whole byte.
std::string canonicalBase64(std::string_view text, bool url) {
  static constexpr char kStandard[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  static constexpr char kUrl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const char* alphabet = url ? kUrl : kStandard;
  std::string bytes;
  uint32_t bits = 0;
  int held = 0;
  size_t digits = 0;
  for (char c : text) {
    if (c == '=' && digits % 4 >= 2) break;  // the padding of a last, partial group
    const int digit = base64Digit(c, url);
    if (digit < 0) continue;
    bits = (bits << 6) | static_cast<uint32_t>(digit);
    held += 6;
    ++digits;
    if (held >= 8) {
      held -= 8;
      bytes += static_cast<char>((bits >> held) & 0xff);
    }
  }
  if (digits == 0 || digits % 4 == 1) return {};  // no whole byte in the last character
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) group |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) group |= static_cast<uint8_t>(bytes[i + 2]);
    out += alphabet[(group >> 18) & 63];
    out += alphabet[(group >> 12) & 63];
    if (i + 1 < bytes.size()) {
      out += alphabet[(group >> 6) & 63];
    } else if (!url) {
      out += '=';
    }
    if (i + 2 < bytes.size()) {
      out += alphabet[group & 63];
    } else if (!url) {
      out += '=';
    }
  }
  return out;
}

// Bearer credentials that are a JWS or JWE in compact form (RFC 7515, 7516: 3 or 5 base64url
// segments joined by dots), each segment encoded again the one way (canonicalBase64): many
// JWT libraries decode leniently, so the unused bits of a segment's last character would make
// several spellings of one signed token, a quota each. An empty segment (an unsigned JWS's
// signature) stays empty. Empty when the credentials are not such a token.
std::string canonicalCompactToken(std::string_view credentials) {
  std::string out;
  size_t segments = 0;
  for (;;) {
    const size_t dot = credentials.find('.');
    const std::string_view segment = credentials.substr(0, dot);
    if (!segment.empty()) {
      const std::string canonical = canonicalBase64(segment, true);
      if (canonical.empty()) return {};
      out += canonical;
    }
    ++segments;
    if (dot == std::string_view::npos) break;
    out += '.';
    credentials.remove_prefix(dot + 1);
  }
  return segments == 3 || segments == 5 ? out : std::string();
}

}  // namespace

std::string headerKey(std::string_view name, std::string_view value) {
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
    // Basic credentials (RFC 7617) and JWTs as the bytes they decode to: many servers decode
    // them leniently, so each spelling would otherwise be a quota of its own for one secret.
    // Text that holds no whole byte, or a Bearer token that is no JWT, is its key as it is.
    std::string canonical;
    if (key == "basic ") {
      canonical = canonicalBase64(credentials, false);
    } else if (key == "bearer ") {
      canonical = canonicalCompactToken(credentials);
    }
    key += canonical.empty() ? std::string(credentials) : canonical;
  }
  return key;
}

}  // namespace floodgate::http
