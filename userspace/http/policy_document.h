// SPDX-License-Identifier: MIT
// The published form of the `http:` section: what the controller hands to services (a file
// or a Redis key) and how the library reads it back, with the same parser and diagnostics.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "common/result.h"
#include "http/policy.h"

namespace floodgate::http {

// A rendered document: `version: <hash>` plus the `http:` section.
struct PolicyDocument {
  std::string version;  // 16 hex digits: a hash of the section, so equal policies, equal version
  std::string text;
};

// Re-emits the `http:` node without `publish:` (which only the controller reads) under a
// top-level `version:` derived from its content.
PolicyDocument renderPolicyDocument(const YAML::Node& http);

struct PublishedPolicies {
  std::string version;
  HttpConfig config;
};

// Reads a published document; `source` (a path, or "redis:KEY") names it in diagnostics.
// An error lists every problem (`source:line:column: message`, one per line) when the
// section is invalid or there is no version (not a document floodgate published).
Result<PublishedPolicies> parsePolicyDocument(const std::string& text, const std::string& source);

}  // namespace floodgate::http
