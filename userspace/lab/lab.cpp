// SPDX-License-Identifier: MIT
// Replaying arrivals through algorithms, and the lab's text and JSON output.
#include "lab/lab.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace floodgate::http::lab {

namespace {

constexpr int64_t kNsPerMs = 1'000'000;

std::string_view outcomeWord(Outcome outcome) {
  switch (outcome) {
    case Outcome::kAllowed:
      return "allowed";
    case Outcome::kRejected:
      return "rejected";
    case Outcome::kCostExceedsBurst:
      return "never";
    case Outcome::kStoreUnavailable:
      return "unavailable";
    case Outcome::kOverloaded:
      return "overloaded";
    case Outcome::kAmbiguousKey:
      return "ambiguous";
  }
  return "?";
}

// Most upstream times in any half-open window [t, t + window_ms); t is an upstream time.
void measureBusiestWindow(LabResult& result, int64_t window_ms) {
  std::vector<int64_t> times;
  for (const LabRequest& r : result.requests) {
    if (r.upstream_ms) times.push_back(*r.upstream_ms);
  }
  std::sort(times.begin(), times.end());
  size_t end = 0;
  for (size_t start = 0; start < times.size(); ++start) {
    while (end < times.size() && times[end] < times[start] + window_ms) ++end;
    int64_t count = static_cast<int64_t>(end - start);
    if (count > result.max_in_window) {
      result.max_in_window = count;
      result.max_window_start_ms = times[start];
    }
  }
}

std::string describe(const LabResult& result) {
  char text[128];
  if (isWindowAlgorithm(result.algorithm)) {
    std::snprintf(text, sizeof text, "%s (limit %lld per %lld ms)",
                  std::string(algorithmName(result.algorithm)).c_str(),
                  static_cast<long long>(result.params.limit),
                  static_cast<long long>(result.params.window_ms));
  } else {
    std::snprintf(text, sizeof text, "%s (capacity %lld, %g/s)",
                  std::string(algorithmName(result.algorithm)).c_str(),
                  static_cast<long long>(result.params.capacity), result.params.rate_per_s);
  }
  return text;
}

}  // namespace

Result<std::vector<int64_t>> parseArrivals(std::string_view text, std::string_view flag) {
  std::vector<int64_t> arrivals;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    std::string_view item = text.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    int64_t value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || value < 0) {
      return Error::usage(std::string(flag) + ": '" + std::string(item) +
                          "' is not a time in ms (expected e.g. " + std::string(flag) +
                          " 0,10,20)");
    }
    if (!arrivals.empty() && value < arrivals.back()) {
      return Error::usage(std::string(flag) + " must be in time order: " + std::to_string(value) +
                          " comes after " + std::to_string(arrivals.back()));
    }
    if (arrivals.size() == kMaxArrivals) {
      return Error::usage(std::string(flag) + ": at most " + std::to_string(kMaxArrivals) +
                          " times");
    }
    arrivals.push_back(value);
    start = comma + 1;
  }
  return arrivals;
}

Result<LabReport> runLab(const LabOptions& options) {
  if (options.algorithms.empty() || options.algorithms.size() > 2) {
    return Error::usage(
        "give one or two --algorithm (fixed_window, sliding_window_log, "
        "sliding_window_counter, token_bucket, gcra, leaky_bucket)");
  }
  if (options.arrivals_ms.empty()) return Error::usage("--arrivals needs at least one time");
  if (options.cost < 1) return Error::usage("--cost must be at least 1");
  LabReport report;
  report.window_ms = options.window_ms.value_or(1000);
  if (report.window_ms < 1) return Error::usage("--window must be at least 1 ms");

  // The names first: which flags fit depends on them, so a wrong name is the mistake to
  // report, not the flags that would fit the right one.
  bool any_window = false, any_bucket = false;
  for (const std::string& name : options.algorithms) {
    std::optional<AlgorithmKind> kind = algorithmFromName(name);
    if (!kind) {
      return Error::usage("unknown --algorithm '" + name +
                          "' (expected fixed_window, sliding_window_log, "
                          "sliding_window_counter, token_bucket, gcra or leaky_bucket)");
    }
    (isWindowAlgorithm(*kind) ? any_window : any_bucket) = true;
  }
  if (options.limit && !any_window) {
    return Error::usage("--limit is for window algorithms; " + options.algorithms.front() +
                        " takes --capacity and --rate");
  }
  if ((options.capacity || options.rate_per_s) && !any_bucket) {
    return Error::usage("--capacity and --rate are for bucket algorithms; " +
                        options.algorithms.front() + " takes --limit and --window");
  }

  for (const std::string& name : options.algorithms) {
    std::optional<AlgorithmKind> kind = algorithmFromName(name);  // known: checked above
    AlgorithmParams params;
    params.kind = *kind;
    if (isWindowAlgorithm(*kind)) {
      if (!options.limit) return Error::usage(name + " needs --limit (and --window, in ms)");
      params.limit = *options.limit;
      params.window_ms = report.window_ms;
    } else {
      if (!options.capacity || !options.rate_per_s) {
        return Error::usage(name + " needs --capacity and --rate (per second)");
      }
      params.capacity = *options.capacity;
      params.rate_per_s = *options.rate_per_s;
    }
    auto algorithm = makeAlgorithm(params);
    if (!algorithm) return algorithm.error();

    LabResult result;
    result.algorithm = *kind;
    result.params = params;
    KeyState state;  // one key on a virtual clock that only moves with the arrivals
    for (int64_t arrival_ms : options.arrivals_ms) {
      Decision d = (*algorithm)->decide(state, arrival_ms * kNsPerMs, options.cost);
      LabRequest r;
      r.arrival_ms = arrival_ms;
      r.outcome = d.outcome;
      if (d.allowed()) {
        r.delay_ms = (d.delay_ns + kNsPerMs - 1) / kNsPerMs;
        r.upstream_ms = arrival_ms + r.delay_ms;
      }
      result.requests.push_back(r);
    }
    measureBusiestWindow(result, report.window_ms);
    report.results.push_back(std::move(result));
  }
  return report;
}

std::string formatText(const LabReport& report) {
  std::string out;
  char line[256];
  constexpr int kColumn = 40;
  std::snprintf(line, sizeof line, "%10s", "");
  out += line;
  for (const LabResult& r : report.results) {
    std::snprintf(line, sizeof line, "  %-*s", kColumn, describe(r).c_str());
    out += line;
  }
  out += "\n";
  std::snprintf(line, sizeof line, "%10s", "arrival_ms");
  out += line;
  for (size_t i = 0; i < report.results.size(); ++i) {
    std::snprintf(line, sizeof line, "  %-10s %9s %12s%*s", "decision", "delay_ms", "upstream_ms",
                  kColumn - 33, "");
    out += line;
  }
  out += "\n";
  size_t rows = report.results.front().requests.size();
  for (size_t i = 0; i < rows; ++i) {
    std::snprintf(line, sizeof line, "%10lld",
                  static_cast<long long>(report.results.front().requests[i].arrival_ms));
    out += line;
    for (const LabResult& r : report.results) {
      const LabRequest& q = r.requests[i];
      std::string upstream = q.upstream_ms ? std::to_string(*q.upstream_ms) : "-";
      std::string delay = q.upstream_ms ? std::to_string(q.delay_ms) : "-";
      std::snprintf(line, sizeof line, "  %-10s %9s %12s%*s",
                    std::string(outcomeWord(q.outcome)).c_str(), delay.c_str(), upstream.c_str(),
                    kColumn - 33, "");
      out += line;
    }
    out += "\n";
  }
  // No trailing blanks at the end of a line.
  std::string trimmed;
  for (char c : out) {
    if (c == '\n') {
      while (!trimmed.empty() && trimmed.back() == ' ') trimmed.pop_back();
    }
    trimmed += c;
  }
  out = std::move(trimmed);
  out += "\nmost requests upstream in any " + std::to_string(report.window_ms) + " ms window:\n";
  for (const LabResult& r : report.results) {
    int64_t allowed = std::count_if(r.requests.begin(), r.requests.end(),
                                    [](const LabRequest& q) { return q.upstream_ms.has_value(); });
    std::snprintf(line, sizeof line, "  %-24s %lld",
                  std::string(algorithmName(r.algorithm)).c_str(),
                  static_cast<long long>(r.max_in_window));
    out += line;
    if (r.max_in_window > 0) {
      std::snprintf(line, sizeof line, "  (from %lld ms; %lld of %zu admitted)",
                    static_cast<long long>(r.max_window_start_ms), static_cast<long long>(allowed),
                    r.requests.size());
      out += line;
    }
    out += "\n";
  }
  return out;
}

std::string formatJson(const LabReport& report) {
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const LabResult& r : report.results) {
    nlohmann::ordered_json requests = nlohmann::ordered_json::array();
    for (const LabRequest& q : r.requests) {
      nlohmann::ordered_json item;
      item["arrival_ms"] = q.arrival_ms;
      item["allowed"] = q.upstream_ms.has_value();
      item["delay_ms"] = q.delay_ms;
      item["upstream_ms"] = q.upstream_ms ? nlohmann::ordered_json(*q.upstream_ms) : nullptr;
      requests.push_back(std::move(item));
    }
    nlohmann::ordered_json result;
    result["algorithm"] = std::string(algorithmName(r.algorithm));
    result["requests"] = std::move(requests);
    result["max_in_window"] = r.max_in_window;
    results.push_back(std::move(result));
  }
  nlohmann::ordered_json root;
  root["results"] = std::move(results);
  return root.dump() + "\n";
}

}  // namespace floodgate::http::lab
