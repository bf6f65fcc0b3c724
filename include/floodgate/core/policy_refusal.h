// SPDX-License-Identifier: MIT
// Why a published policy document was refused: what a service counts and exports.
#pragma once

#include <cstddef>

namespace floodgate::http {

enum class PolicyRefusal {
  kUnsigned,      // read from Redis without a signature
  kBadSignature,  // not signed with this fleet's secret for this key (forged, altered, cut)
  kStale,         // signed, but older than the set in force (a replay)
  kInvalid,       // not a policy document, or its policies do not compile
  kUnsafeFile,    // a published file others than root or the service could have written
};
constexpr size_t kPolicyRefusalKinds = 5;

// The metrics label: "unsigned", "bad_signature", "stale", "invalid", "unsafe_file".
constexpr const char* policyRefusalName(PolicyRefusal reason) {
  switch (reason) {
    case PolicyRefusal::kUnsigned:
      return "unsigned";
    case PolicyRefusal::kBadSignature:
      return "bad_signature";
    case PolicyRefusal::kStale:
      return "stale";
    case PolicyRefusal::kInvalid:
      return "invalid";
    case PolicyRefusal::kUnsafeFile:
      return "unsafe_file";
  }
  return "invalid";
}

}  // namespace floodgate::http
