// SPDX-License-Identifier: MIT
// floodgate lab: replays arrival times through one or two algorithms on a virtual clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "floodgate/common/result.h"
#include "floodgate/core/algorithm.h"

namespace floodgate::http::lab {

// What to replay. Window algorithms use limit and window_ms; bucket algorithms use capacity
// and rate_per_s (for the leaky bucket: queue depth and drain rate). window_ms is also the
// length of the window max_in_window is measured over (1000 ms when not given).
struct LabOptions {
  std::vector<std::string> algorithms;  // one or two names, e.g. "fixed_window"
  std::optional<int64_t> limit;
  std::optional<int64_t> window_ms;
  std::optional<int64_t> capacity;
  std::optional<double> rate_per_s;
  int64_t cost = 1;
  std::vector<int64_t> arrivals_ms;  // non-decreasing, >= 0
};

struct LabRequest {
  int64_t arrival_ms = 0;
  Outcome outcome = Outcome::kAllowed;
  int64_t delay_ms = 0;                // rounded up to whole ms
  std::optional<int64_t> upstream_ms;  // when upstream receives it; none if rejected
};

struct LabResult {
  AlgorithmKind algorithm = AlgorithmKind::kFixedWindow;
  AlgorithmParams params;
  std::vector<LabRequest> requests;
  int64_t max_in_window = 0;        // most requests upstream in any [t, t + window)
  int64_t max_window_start_ms = 0;  // the first such t
};

struct LabReport {
  int64_t window_ms = 1000;
  std::vector<LabResult> results;
};

inline constexpr size_t kMaxArrivals = 100'000;

// "0,10,20" -> {0, 10, 20}; a usage error names `flag` and says which item is wrong.
Result<std::vector<int64_t>> parseArrivals(std::string_view text,
                                           std::string_view flag = "--arrivals");

// Checks the options (usage errors name the missing or bad flag) and replays them.
Result<LabReport> runLab(const LabOptions& options);

// Per request, side by side: decision, delay and upstream time; then per algorithm the most
// requests upstream in any window.
std::string formatText(const LabReport& report);
// {"results": [{"algorithm": "...", "requests": [{"arrival_ms", "allowed", "delay_ms",
// "upstream_ms" (null if rejected)}...], "max_in_window": N}]}
std::string formatJson(const LabReport& report);
// An SVG picture of the timelines: arrivals, upstream receipts, rejections, busiest window.
std::string renderSvg(const LabReport& report);

}  // namespace floodgate::http::lab
