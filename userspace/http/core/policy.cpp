// SPDX-License-Identifier: MIT
// Route matching and per-route cost.
#include "floodgate/core/policy.h"

#include <algorithm>

namespace floodgate::http {

bool RouteMatch::matches(std::string_view method, std::string_view path) const {
  auto listed = [&](std::string_view m) {
    return std::find(methods.begin(), methods.end(), m) != methods.end();
  };
  // HEAD runs the GET handler (RFC 9110; cpp-httplib routes it there): a GET match or cost
  // that HEAD escaped would let the same work through unlimited or cheaper
  if (!methods.empty() && !listed(method) && !(method == "HEAD" && listed("GET"))) return false;
  if (!path.starts_with(path_prefix)) return false;
  // Whole segments only: "/api" must not match "/apis".
  return path.size() == path_prefix.size() || path_prefix.ends_with('/') ||
         path[path_prefix.size()] == '/' || path[path_prefix.size()] == '?';
}

int64_t PolicyConfig::costFor(std::string_view method, std::string_view path) const {
  for (const RouteCost& route : routes) {
    if (route.match.matches(method, path)) return route.cost;
  }
  return cost;
}

}  // namespace floodgate::http
