// SPDX-License-Identifier: MIT
// HTTP header text helpers.
#include "floodgate/core/header_text.h"

#include <algorithm>
#include <cctype>

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
    key += credentials;
  }
  return key;
}

}  // namespace floodgate::http
