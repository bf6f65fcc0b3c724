// SPDX-License-Identifier: MIT
// The normal form of a request's path, which policies, route costs and priority classes
// match: one spelling for every path a server resolves to the same resource.
#pragma once

#include <string>
#include <string_view>

namespace floodgate::http {

// Whether `path` is in normal form: it starts with '/', and no segment is empty (but the
// last, after a trailing '/'), "." or "..".
bool isNormalPath(std::string_view path);

// The normal form of the percent-decoded `path` of a request target: `path` itself when it
// is normal already, else its normal form written to `buffer` (and a view of it). An
// absolute-form target ("http://host/x", RFC 9112 3.2.2) is its path ("/x"); a path without
// a leading '/' ("x", "*") gets one; runs of '/' are one; "." segments are dropped and ".."
// ones remove the segment before, never going above '/' (RFC 3986 5.2.4), so "/a/." and
// "/a/b/.." are "/a/". A trailing '/' and the case of letters are kept: servers tell both
// apart. Thread-safe; allocates only when `path` is not normal.
std::string_view normalPath(std::string_view path, std::string& buffer);

}  // namespace floodgate::http
