// SPDX-License-Identifier: MIT
// The published form of the `http:` section: what the controller hands to services (a file
// or a Redis key) and how the library reads it back, with the same parser and diagnostics.
// A document published to Redis is signed with the fleet's secret (fleet_secret.h) and
// carries a serial that only grows, so a service can refuse a forged or replayed one.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "floodgate/common/result.h"
#include "floodgate/core/policy.h"
#include "floodgate/core/policy_refusal.h"

namespace floodgate::http {

// What a signed document is bound to: the Redis key it is published at (a document signed
// for another key is not valid here) and the fleet's secret.
struct PolicySigning {
  std::string redis_key;
  std::string secret;
};

// A rendered document: `version: <hash>` plus the `http:` section; signed, also `serial:`,
// `key:` and a last line `signature: <hex HMAC-SHA256>`.
struct PolicyDocument {
  std::string version;  // 16 hex digits: a hash of the section, so equal policies, equal version
  uint64_t serial = 0;  // signed documents: grows with every publish (0: unsigned)
  std::string text;
};

// Re-emits the `http:` node without `publish:` (which only the controller reads) under a
// top-level `version:` derived from its content. Unsigned: for a file only.
PolicyDocument renderPolicyDocument(const YAML::Node& http);

// The same, with `serial` and `signing.redis_key` in it, signed with `signing.secret`.
PolicyDocument renderSignedPolicyDocument(const YAML::Node& http, uint64_t serial,
                                          const PolicySigning& signing);

struct PublishedPolicies {
  std::string version;
  uint64_t serial = 0;  // 0 when the document has none
  HttpConfig config;
};

// Reads a published document, without looking at a signature (a file: its permissions
// protect it); `source` (a path, or "redis:KEY") names it in diagnostics. An error lists
// every problem (`source:line:column: message`, one per line) when the section is invalid
// or there is no version (not a document floodgate published).
Result<PublishedPolicies> parsePolicyDocument(const std::string& text, const std::string& source);

// Reads a document from Redis: only when its signature is `signing`'s over everything
// before it is any of it parsed. An error sets `*refusal`: kUnsigned, kBadSignature (also
// signed for another key, or no secret of kMinFleetSecretBytes to check with) or kInvalid.
// Whether its serial is newer than the set in force is the caller's to check.
Result<PublishedPolicies> parseSignedPolicyDocument(const std::string& text,
                                                    const std::string& source,
                                                    const PolicySigning& signing,
                                                    PolicyRefusal* refusal);

}  // namespace floodgate::http
