// SPDX-License-Identifier: MIT
// Publishing the `http:` section to services: a file on this host, a Redis key for a fleet.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "common/result.h"
#include "http/policy.h"

namespace floodgate::http {

// What was published, and where ("/run/floodgate/http-policies.yaml", "redis key fg:policies").
struct PublishReport {
  std::string version;
  std::vector<std::string> targets;

  // "published http policies version V to T1, T2"
  std::string describe() const;
};

// The document of `http` (validated into `config`) to every target of config.publish: the
// file, written atomically; the Redis key (SET), then its version PUBLISHed on the channel so
// followers GET it at once. All targets are tried; the error names
// the ones that failed. Blocking (a Redis round trip, bounded by a few seconds).
Result<PublishReport> publishPolicies(const YAML::Node& http, const HttpConfig& config);

// Reads `config_path`, validates its `http:` section and publishes it. An error when the
// file is invalid or has no `http.publish`.
Result<PublishReport> publishHttpPolicies(const std::string& config_path);

}  // namespace floodgate::http
