// SPDX-License-Identifier: MIT
// Route matching and per-route cost.
#include "floodgate/core/policy.h"

#include <algorithm>

namespace floodgate::http {

bool RouteMatch::matches(std::string_view method, std::string_view path) const {
  if (!methods.empty() && std::find(methods.begin(), methods.end(), method) == methods.end()) {
    return false;
  }
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
