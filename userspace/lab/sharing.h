// SPDX-License-Identifier: MIT
// floodgate lab --sharing: one limit shared by many nodes, charged centrally or prefetched.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "floodgate/common/result.h"

namespace floodgate::http::lab {

// What to replay. Either nodes x requests_per_node in round-robin order (node 0's first
// request, node 1's first, ..., node 0's second, ...) or node_arrivals_ms, one list of
// arrival times per node, merged by time (the lower node first within the same ms).
// Every request costs one unit; the limit does not refill during the replay (one window),
// so arrival times only order the requests.
struct SharingOptions {
  std::optional<int64_t> nodes;
  std::optional<int64_t> requests_per_node;
  std::optional<int64_t> limit;  // units at the centre
  std::optional<int64_t> batch;  // units a prefetching node borrows at most per round trip
  double rtt_ms = 1;             // one round trip to the centre
  std::vector<std::vector<int64_t>> node_arrivals_ms;
};

inline constexpr int64_t kMaxSharingNodes = 1000;
inline constexpr int64_t kMaxSharingRequests = 100'000;             // over all nodes
inline constexpr int64_t kMaxSharingUnits = 1'000'000'000'000'000;  // limit and batch
inline constexpr double kMaxRttMs = 60'000;

enum class SharingMode {
  kCentral,   // every request charged at the centre: one round trip each
  kPrefetch,  // a node with no units left borrows min(batch, remaining), then spends locally
};
std::string_view sharingModeName(SharingMode mode);  // "central", "prefetch"

struct NodeFigures {
  int64_t admitted = 0;
  int64_t rejected = 0;
  int64_t stranded = 0;  // borrowed and not spent when the replay ends
  int64_t round_trips = 0;
};

struct ModeFigures {
  SharingMode mode = SharingMode::kCentral;
  std::vector<NodeFigures> nodes;
  int64_t admitted = 0;
  int64_t rejected = 0;
  int64_t round_trips = 0;  // a failed borrow counts as one
  double wait_ms = 0;       // round_trips x rtt_ms
  int64_t left_at_centre = 0;
  int64_t stranded = 0;
  int64_t fewer_than_central = 0;   // central's admitted minus this mode's
  int64_t rejected_while_held = 0;  // rejections while another node held unspent units
};

struct SharingReport {
  int64_t nodes = 0;
  std::optional<int64_t> requests_per_node;  // none: the order came from arrival times
  int64_t limit = 0;
  int64_t batch = 0;
  double rtt_ms = 0;
  ModeFigures central;
  ModeFigures prefetch;
};

// One --node-arrivals text per node ("0,10,20", as parseArrivals reads it), within the
// bounds on nodes and times, checked as it goes.
Result<std::vector<std::vector<int64_t>>> parseNodeArrivals(const std::vector<std::string>& texts);

// Checks the options (usage errors name the flag) and plays the requests through both modes.
Result<SharingReport> runSharing(const SharingOptions& options);

// The modes side by side, then per node admitted, stranded, rejected and round trips.
std::string formatSharingText(const SharingReport& report);
// {"nodes", "requests_per_node" (null with arrival times), "limit", "batch", "rtt_ms",
//  "modes": [{"mode", "admitted", "rejected", "round_trips", "wait_ms", "left_at_centre",
//  "stranded", "fewer_than_central", "rejected_while_held",
//  "nodes": [{"node", "admitted", "stranded", "rejected", "round_trips"}...]}...]}
std::string formatSharingJson(const SharingReport& report);
// One quota bar per node and mode, side by side: admitted, stranded, rejected.
std::string renderSharingSvg(const SharingReport& report);

}  // namespace floodgate::http::lab
