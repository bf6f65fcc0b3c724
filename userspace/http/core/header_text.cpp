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

// The 6 bits base64 character `c` stands for, in the standard or the URL-safe alphabet
// (RFC 4648), or -1.
int base64Digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

// Basic credentials (RFC 7617) as the bytes a lenient decoder reads, encoded again the one
// standard way: with or without padding, in either alphabet, with spaces or line breaks
// among them, and whatever the unused low bits of the last character, one credential is one
// text. Many servers decode that leniently, so each spelling would otherwise be a bucket of
// its own for one password. Empty when the text is not base64 at all: then it is its key as
// it is (a server refuses it either way).
std::string canonicalBasic(std::string_view credentials) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  uint32_t bits = 0;
  int held = 0;
  size_t digits = 0;
  for (char c : credentials) {
    if (c == '=' || c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    const int digit = base64Digit(c);
    if (digit < 0) return {};
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
    out += kAlphabet[(group >> 18) & 63];
    out += kAlphabet[(group >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(group >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[group & 63] : '=';
  }
  return out;
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
    const std::string canonical = key == "basic " ? canonicalBasic(credentials) : std::string();
    key += canonical.empty() ? std::string(credentials) : canonical;
  }
  return key;
}

}  // namespace floodgate::http
