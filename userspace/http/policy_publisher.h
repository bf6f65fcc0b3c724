// SPDX-License-Identifier: MIT
// Publishing the `http:` section to services: a file on this host, a Redis key for a fleet.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "common/result.h"
#include "http/policy.h"

namespace floodgate::http {

// The document of `http` (validated into `config`) to every target of config.publish: the
// file, written atomically; the Redis key (SET), then its version PUBLISHed on the channel so
// followers GET it at once. Returns the version. All targets are tried; the error names
// the ones that failed. Blocking (a Redis round trip, bounded by a few seconds).
Result<std::string> publishPolicies(const YAML::Node& http, const HttpConfig& config);

// Reads `config_path`, validates its `http:` section and publishes it. An error when the
// file is invalid or has no `http.publish`.
Result<std::string> publishHttpPolicies(const std::string& config_path);

}  // namespace floodgate::http
