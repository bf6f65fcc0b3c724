// SPDX-License-Identifier: MIT
// Formatting the RateLimit fields, Retry-After and the problem+json body.
#include "http/headers.h"

#include <nlohmann/json.hpp>

namespace floodgate::http {

namespace {

// A structured-field string: quoted, with '"' and '\' escaped.
std::string sfString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

int64_t ceilSeconds(int64_t ns) { return ns <= 0 ? 0 : (ns + kNsPerS - 1) / kNsPerS; }

}  // namespace

std::string rateLimitPolicyHeader(const Verdict& verdict) {
  std::string out;
  for (const PolicyDecision& pd : verdict.decisions) {
    if (!out.empty()) out += ", ";
    out += sfString(pd.policy->name) + ";q=" + std::to_string(pd.algorithm->quota()) +
           ";w=" + std::to_string(pd.algorithm->windowSeconds());
  }
  return out;
}

std::string rateLimitHeader(const Verdict& verdict) {
  std::string out;
  for (const PolicyDecision& pd : verdict.decisions) {
    if (!out.empty()) out += ", ";
    out += sfString(pd.policy->name) +
           ";r=" + std::to_string(std::max<int64_t>(0, pd.decision.remaining)) +
           ";t=" + std::to_string(ceilSeconds(pd.decision.reset_ns));
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
  }
  return 429;
}

std::string problemJson(const Verdict& verdict) {
  nlohmann::json body;
  const Decision& b = verdict.binding;
  body["type"] = "about:blank";
  body["status"] = statusFor(verdict);
  nlohmann::json violated = nlohmann::json::array();
  for (std::string_view name : verdict.violated) violated.push_back(std::string(name));
  body["violated-policies"] = violated;
  std::string policy(b.policy);
  switch (b.outcome) {
    case Outcome::kCostExceedsBurst:
      body["title"] = "Too Many Requests";
      body["detail"] = "this request costs more than policy '" + policy +
                       "' can ever admit at once (burst " + std::to_string(b.limit) +
                       "); retrying will not help";
      break;
    case Outcome::kStoreUnavailable:
      body["title"] = "Service Unavailable";
      body["detail"] = "the rate-limit store of policy '" + policy +
                       "' is unavailable and the policy fails closed";
      break;
    case Outcome::kOverloaded:
      body["title"] = "Service Unavailable";
      body["detail"] = "overloaded: requests of priority '" + std::string(verdict.priority) +
                       "' are shed while the service is this busy; retry after " +
                       std::to_string(retryAfterSeconds(b.retry_after_ns)) + " s";
      body["overloaded"] = true;
      body["priority"] = std::string(verdict.priority);
      body["retry-after"] = retryAfterSeconds(b.retry_after_ns);
      break;
    case Outcome::kRejected:
    case Outcome::kAllowed:
      body["title"] = "Too Many Requests";
      body["detail"] = "rate limit of policy '" + policy + "' exceeded; retry after " +
                       std::to_string(retryAfterSeconds(b.retry_after_ns)) + " s";
      body["retry-after"] = retryAfterSeconds(b.retry_after_ns);
      break;
  }
  return body.dump();
}

std::vector<std::pair<std::string, std::string>> responseHeaders(const Verdict& verdict) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (verdict.limited()) {
    headers.emplace_back("RateLimit-Policy", rateLimitPolicyHeader(verdict));
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
