// SPDX-License-Identifier: MIT
// Publishing the `http:` section to services: a file on this host, a Redis key for a fleet.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "floodgate/common/result.h"
#include "floodgate/core/policy.h"

namespace floodgate::http {

// What was published, and where ("/run/floodgate/http-policies.yaml", "redis key fg:policies").
struct PublishReport {
  std::string version;
  uint64_t serial = 0;  // of the signed document published to Redis (0: none)
  std::vector<std::string> targets;

  // "published http policies version V (serial S) to T1, T2"
  std::string describe() const;
};

// The document of `http` (validated into `config`) to every target of config.publish: the
// file, written atomically; the Redis key (SET), then its version PUBLISHed on the channel so
// followers GET it at once. With a Redis key the document takes the next serial of
// KEY:serial (Redis's clock in microseconds, never going backwards) and is signed with
// config.publish.secret for that key. All targets are tried; the error names the ones that
// failed. Blocking (two Redis round trips, bounded by a few seconds each).
Result<PublishReport> publishPolicies(const YAML::Node& http, const HttpConfig& config);

// Validates the `http:` section of `text` (the file `source`) and publishes it: exactly the
// text the caller checked, never a second read of a file that may have changed since. An
// error when the section is invalid or has no `http.publish`.
Result<PublishReport> publishHttpPolicyText(const std::string& text, const std::string& source);

// Reads `config_path` and publishes its `http:` section (publishHttpPolicyText).
Result<PublishReport> publishHttpPolicies(const std::string& config_path);

}  // namespace floodgate::http
