// SPDX-License-Identifier: MIT
// Formatting the RateLimit fields, Retry-After and the problem+json body.
#include "floodgate/core/headers.h"

#include <algorithm>
#include <charconv>

namespace floodgate::http {

namespace {

// Every answer is built by appending to one string: a 429 is answered at the rate requests
// arrive, so it should cost no more than an admitted request's headers.

// Appends a structured-field string: quoted, with '"' and '\' escaped (in runs: a policy
// name rarely holds either).
void appendSfString(std::string& out, std::string_view s) {
  out += '"';
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"' || s[i] == '\\') {
      out += s.substr(run, i - run);
      out += '\\';
      run = i;
    }
  }
  out += s.substr(run);
  out += '"';
}

void appendInt(std::string& out, int64_t value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, end);
}

// Appends `s` as the inside of a JSON string: '"', '\' and control characters escaped.
void appendJsonEscaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto byte = static_cast<unsigned char>(s[i]);
    if (byte >= 0x20 && byte != '"' && byte != '\\') continue;
    out += s.substr(run, i - run);
    if (byte < 0x20) {
      out += "\\u00";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += '\\';
      out += s[i];
    }
    run = i + 1;
  }
  out += s.substr(run);
}

// without the overflow of ns + kNsPerS - 1 near INT64_MAX (a wait read from a shared store)
int64_t ceilSeconds(int64_t ns) { return ns <= 0 ? 0 : ns / kNsPerS + (ns % kNsPerS > 0 ? 1 : 0); }

}  // namespace

std::string rateLimitPolicyHeader(const Verdict& verdict) {
  std::string out;
  out.reserve(48 * verdict.decisions.size());
  for (const PolicyDecision& pd : verdict.decisions) {
    if (pd.decision.outcome == Outcome::kAmbiguousKey) continue;  // nobody's quota
    if (!out.empty()) out += ", ";
    appendSfString(out, pd.policy->name);
    out += ";q=";
    appendInt(out, pd.algorithm->quota());
    out += ";w=";
    appendInt(out, pd.algorithm->windowSeconds());
  }
  return out;
}

std::string rateLimitHeader(const Verdict& verdict) {
  std::string out;
  out.reserve(48 * verdict.decisions.size());
  for (const PolicyDecision& pd : verdict.decisions) {
    if (pd.decision.outcome == Outcome::kAmbiguousKey) continue;  // nobody's quota
    if (!out.empty()) out += ", ";
    appendSfString(out, pd.policy->name);
    out += ";r=";
    appendInt(out, std::max<int64_t>(0, pd.decision.remaining));
    out += ";t=";
    appendInt(out, ceilSeconds(pd.decision.reset_ns));
  }
  return out;
}

int64_t retryAfterSeconds(int64_t retry_after_ns) {
  return std::max<int64_t>(1, ceilSeconds(retry_after_ns));
}

int statusFor(const Verdict& verdict) {
  switch (verdict.binding.outcome) {
    case Outcome::kAllowed:
      return 200;
    case Outcome::kStoreUnavailable:
    case Outcome::kOverloaded:
      return 503;
    case Outcome::kRejected:
    case Outcome::kCostExceedsBurst:
      return 429;
    case Outcome::kAmbiguousKey:
      return 400;
  }
  return 429;
}

std::string problemJson(const Verdict& verdict) {
  const Decision& b = verdict.binding;
  const bool retry = b.outcome == Outcome::kRejected || b.outcome == Outcome::kAllowed ||
                     b.outcome == Outcome::kOverloaded;
  const bool unavailable =
      b.outcome == Outcome::kStoreUnavailable || b.outcome == Outcome::kOverloaded;
  // RFC 9457's members first, in the order docs/http.md shows them
  std::string out;
  out.reserve(256);
  out += R"({"type":"about:blank","title":)";
  out += unavailable                           ? R"("Service Unavailable")"
         : b.outcome == Outcome::kAmbiguousKey ? R"("Bad Request")"
                                               : R"("Too Many Requests")";
  out += R"(,"status":)";
  appendInt(out, statusFor(verdict));
  out += R"(,"detail":")";
  switch (b.outcome) {
    case Outcome::kCostExceedsBurst:
      out += "this request costs more than policy '";
      appendJsonEscaped(out, b.policy);
      out += "' can ever admit at once (burst ";
      appendInt(out, b.limit);
      out += "); retrying will not help";
      break;
    case Outcome::kAmbiguousKey:
      out += "the key header of policy '";
      appendJsonEscaped(out, b.policy);
      out +=
          "' names more than one key: it is sent more than once with different values, or "
          "its credentials are not in canonical base64; send it once, canonically encoded";
      break;
    case Outcome::kStoreUnavailable:
      out += "the rate-limit store of policy '";
      appendJsonEscaped(out, b.policy);
      out += "' is unavailable and the policy fails closed";
      break;
    case Outcome::kOverloaded:
      out += "overloaded: requests of priority '";
      appendJsonEscaped(out, verdict.priority);
      out += "' are shed while the service is this busy; retry after ";
      appendInt(out, retryAfterSeconds(b.retry_after_ns));
      out += " s";
      break;
    case Outcome::kRejected:
    case Outcome::kAllowed:
      out += "rate limit of policy '";
      appendJsonEscaped(out, b.policy);
      out += "' exceeded; retry after ";
      appendInt(out, retryAfterSeconds(b.retry_after_ns));
      out += " s";
      break;
  }
  out += '"';
  if (retry) {
    out += R"(,"retry-after":)";
    appendInt(out, retryAfterSeconds(b.retry_after_ns));
  }
  if (b.outcome == Outcome::kOverloaded) {
    out += R"(,"overloaded":true,"priority":")";
    appendJsonEscaped(out, verdict.priority);
    out += '"';
  }
  out += R"(,"violated-policies":[)";
  for (size_t i = 0; i < verdict.violated.size(); ++i) {
    out += i > 0 ? R"(,")" : R"(")";
    appendJsonEscaped(out, verdict.violated[i]);
    out += '"';
  }
  out += "]}";
  return out;
}

std::vector<std::pair<std::string, std::string>> responseHeaders(const Verdict& verdict) {
  std::vector<std::pair<std::string, std::string>> headers;
  headers.reserve(3);
  // an ambiguous key's quota is nobody's: no item tells of it, nor a field of no item
  if (std::string policies = rateLimitPolicyHeader(verdict); !policies.empty()) {
    headers.emplace_back("RateLimit-Policy", std::move(policies));
    headers.emplace_back("RateLimit", rateLimitHeader(verdict));
  }
  if (verdict.binding.outcome == Outcome::kRejected ||
      verdict.binding.outcome == Outcome::kOverloaded) {
    headers.emplace_back("Retry-After",
                         std::to_string(retryAfterSeconds(verdict.binding.retry_after_ns)));
  }
  return headers;
}

}  // namespace floodgate::http
