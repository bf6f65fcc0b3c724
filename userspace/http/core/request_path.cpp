// SPDX-License-Identifier: MIT
// The normal form of a request's path.
#include "floodgate/core/request_path.h"

#include <algorithm>
#include <cctype>

namespace floodgate::http {

namespace {

// `target` without the scheme and authority of an absolute-form target (RFC 3986 3.1: a
// letter, then letters, digits, '+', '-' or '.', then "://", then the authority up to the
// next '/'); any other target as it is.
std::string_view withoutSchemeAndAuthority(std::string_view target) {
  if (target.empty() || !std::isalpha(static_cast<unsigned char>(target.front()))) return target;
  size_t i = 1;
  while (i < target.size() && (std::isalnum(static_cast<unsigned char>(target[i])) ||
                               target[i] == '+' || target[i] == '-' || target[i] == '.')) {
    ++i;
  }
  if (target.substr(i, 3) != "://") return target;
  const size_t path = target.find('/', i + 3);
  return path == std::string_view::npos ? std::string_view() : target.substr(path);
}

}  // namespace

bool isNormalPath(std::string_view path) {
  if (path.empty() || path.front() != '/') return false;
  size_t start = 1;  // of the segment after each '/'
  for (;;) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view segment = path.substr(start, end - start);
    if (segment == "." || segment == "..") return false;
    if (end == path.size()) return true;  // the last segment may be empty: a trailing '/'
    if (segment.empty()) return false;
    start = end + 1;
  }
}

std::string_view normalPath(std::string_view path, std::string& buffer) {
  if (isNormalPath(path)) return path;
  path = withoutSchemeAndAuthority(path);
  buffer.clear();
  buffer.reserve(path.size() + 1);
  bool trailing_slash = false;
  for (size_t start = 0; start < path.size();) {
    if (path[start] == '/') {
      ++start;
      continue;
    }
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view segment = path.substr(start, end - start);
    start = end;
    if (segment == ".." && !buffer.empty()) buffer.resize(buffer.rfind('/'));
    // "/a/." and "/a/b/.." name the directory "/a/", as "/a/" does
    trailing_slash = segment == "." || segment == ".." || end < path.size();
    if (segment == "." || segment == "..") continue;
    buffer += '/';
    buffer += segment;
  }
  if (buffer.empty() || trailing_slash) buffer += '/';
  return buffer;
}

}  // namespace floodgate::http
