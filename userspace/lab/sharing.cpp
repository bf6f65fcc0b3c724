// SPDX-License-Identifier: MIT
// Playing requests from many nodes through central counting and prefetch, and the output.
#include "lab/sharing.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "lab/lab.h"

namespace floodgate::http::lab {

namespace {

constexpr int64_t kCost = 1;  // every request takes one unit

// The centre's one count, kept as the store's decide script keeps it: a request whose cost
// fits takes its cost and min(extra, remaining - cost) units more, in one atomic step.
class Centre {
 public:
  explicit Centre(int64_t limit) : remaining_(limit) {}
  // The units granted (cost plus leased); 0 when the cost does not fit.
  int64_t take(int64_t cost, int64_t extra) {
    if (remaining_ < cost) return 0;
    int64_t granted = cost + std::min(extra, remaining_ - cost);
    remaining_ -= granted;
    return granted;
  }
  int64_t remaining() const { return remaining_; }

 private:
  int64_t remaining_;
};

// The nodes' requests in the order they are decided: node indexes.
std::vector<int64_t> requestOrder(const SharingReport& report, const SharingOptions& options) {
  std::vector<int64_t> order;
  if (report.requests_per_node) {
    order.reserve(static_cast<size_t>(report.nodes * *report.requests_per_node));
    for (int64_t k = 0; k < *report.requests_per_node; ++k) {
      for (int64_t n = 0; n < report.nodes; ++n) order.push_back(n);
    }
    return order;
  }
  std::vector<std::pair<int64_t, int64_t>> arrivals;  // (time, node)
  for (size_t n = 0; n < options.node_arrivals_ms.size(); ++n) {
    for (int64_t t : options.node_arrivals_ms[n]) arrivals.emplace_back(t, n);
  }
  std::stable_sort(arrivals.begin(), arrivals.end());
  order.reserve(arrivals.size());
  for (const auto& [t, n] : arrivals) order.push_back(n);
  return order;
}

// Each request as PrefetchStore::decide takes it: units held here pay for it; otherwise one
// round trip asks the centre for the cost and up to batch - cost more (central mode: none).
ModeFigures play(SharingMode mode, const std::vector<int64_t>& order, const SharingReport& r) {
  ModeFigures f;
  f.mode = mode;
  f.nodes.resize(static_cast<size_t>(r.nodes));
  std::vector<int64_t> held(f.nodes.size(), 0);
  int64_t held_total = 0;
  Centre centre(r.limit);
  const int64_t extra = mode == SharingMode::kPrefetch ? std::max<int64_t>(0, r.batch - kCost) : 0;
  for (int64_t n : order) {
    NodeFigures& node = f.nodes[n];
    if (held[n] >= kCost) {
      held[n] -= kCost;
      held_total -= kCost;
      ++node.admitted;
      continue;
    }
    ++node.round_trips;
    int64_t granted = centre.take(kCost, extra);
    if (granted == 0) {
      ++node.rejected;
      if (held_total - held[n] > 0) ++f.rejected_while_held;
      continue;
    }
    ++node.admitted;
    held[n] += granted - kCost;
    held_total += granted - kCost;
  }
  for (size_t n = 0; n < f.nodes.size(); ++n) {
    NodeFigures& node = f.nodes[n];
    node.stranded = held[n];
    f.admitted += node.admitted;
    f.rejected += node.rejected;
    f.round_trips += node.round_trips;
    f.stranded += node.stranded;
  }
  f.wait_ms = static_cast<double>(f.round_trips) * r.rtt_ms;
  f.left_at_centre = centre.remaining();
  return f;
}

Error tooManyNodes() {
  return Error::usage("--node-arrivals: at most " + std::to_string(kMaxSharingNodes) + " nodes");
}

Error tooManyTimes() {
  return Error::usage("--node-arrivals: at most " + std::to_string(kMaxSharingRequests) +
                      " times over all nodes");
}

Status checkCount(const std::optional<int64_t>& value, const char* flag, int64_t most) {
  if (!value) return Error::usage(std::string("--sharing needs ") + flag);
  if (*value < 1 || *value > most) {
    return Error::usage(std::string(flag) + " must be between 1 and " + std::to_string(most) +
                        " (got " + std::to_string(*value) + ")");
  }
  return okStatus();
}

std::string ms(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace

std::string_view sharingModeName(SharingMode mode) {
  return mode == SharingMode::kCentral ? "central" : "prefetch";
}

Result<std::vector<std::vector<int64_t>>> parseNodeArrivals(const std::vector<std::string>& texts) {
  if (texts.size() > static_cast<size_t>(kMaxSharingNodes)) return tooManyNodes();
  std::vector<std::vector<int64_t>> nodes;
  size_t total = 0;
  for (const std::string& text : texts) {
    auto times = parseArrivals(text, "--node-arrivals");
    if (!times) return times.error();
    total += times->size();
    if (total > static_cast<size_t>(kMaxSharingRequests)) return tooManyTimes();
    nodes.push_back(std::move(*times));
  }
  return nodes;
}

Result<SharingReport> runSharing(const SharingOptions& options) {
  SharingReport report;
  if (!options.node_arrivals_ms.empty()) {
    if (options.nodes || options.requests_per_node) {
      return Error::usage(
          "--node-arrivals gives the nodes and their requests: leave out --nodes and "
          "--requests");
    }
    if (options.node_arrivals_ms.size() > static_cast<size_t>(kMaxSharingNodes)) {
      return tooManyNodes();
    }
    size_t total = 0;
    for (const std::vector<int64_t>& times : options.node_arrivals_ms) {
      if (times.empty()) return Error::usage("--node-arrivals: every node needs a time");
      total += times.size();
    }
    if (total > static_cast<size_t>(kMaxSharingRequests)) return tooManyTimes();
    report.nodes = static_cast<int64_t>(options.node_arrivals_ms.size());
  } else {
    if (Status s = checkCount(options.nodes, "--nodes", kMaxSharingNodes); !s.ok())
      return s.error();
    if (Status s = checkCount(options.requests_per_node, "--requests", kMaxSharingRequests);
        !s.ok()) {
      return s.error();
    }
    if (*options.nodes * *options.requests_per_node > kMaxSharingRequests) {
      return Error::usage("--nodes x --requests: at most " + std::to_string(kMaxSharingRequests) +
                          " requests in all");
    }
    report.nodes = *options.nodes;
    report.requests_per_node = options.requests_per_node;
  }
  if (Status s = checkCount(options.limit, "--limit", kMaxSharingUnits); !s.ok()) return s.error();
  if (Status s = checkCount(options.batch, "--batch", kMaxSharingUnits); !s.ok()) return s.error();
  if (!(options.rtt_ms >= 0 && options.rtt_ms <= kMaxRttMs)) {  // NaN fails too
    return Error::usage("--rtt must be between 0 and " + ms(kMaxRttMs) + " ms");
  }
  report.limit = *options.limit;
  report.batch = *options.batch;
  report.rtt_ms = options.rtt_ms;

  std::vector<int64_t> order = requestOrder(report, options);
  report.central = play(SharingMode::kCentral, order, report);
  report.prefetch = play(SharingMode::kPrefetch, order, report);
  for (ModeFigures* f : {&report.central, &report.prefetch}) {
    f->fewer_than_central = report.central.admitted - f->admitted;
  }
  return report;
}

std::string formatSharingText(const SharingReport& report) {
  std::string out;
  char line[256];
  std::string order = report.requests_per_node ? std::to_string(*report.requests_per_node) +
                                                     " requests each, round-robin"
                                               : std::string("requests by arrival time");
  std::snprintf(line, sizeof line, "%lld nodes, %s; limit %lld, batch %lld, round trip %s ms\n\n",
                static_cast<long long>(report.nodes), order.c_str(),
                static_cast<long long>(report.limit), static_cast<long long>(report.batch),
                ms(report.rtt_ms).c_str());
  out += line;

  const ModeFigures& c = report.central;
  const ModeFigures& p = report.prefetch;
  std::snprintf(line, sizeof line, "%-36s %12s %12s\n", "", "central", "prefetch");
  out += line;
  auto row = [&](const char* name, int64_t central, int64_t prefetch) {
    std::snprintf(line, sizeof line, "%-36s %12lld %12lld\n", name, static_cast<long long>(central),
                  static_cast<long long>(prefetch));
    out += line;
  };
  row("admitted", c.admitted, p.admitted);
  row("rejected", c.rejected, p.rejected);
  row("round trips to the centre", c.round_trips, p.round_trips);
  std::snprintf(line, sizeof line, "%-36s %12s %12s\n", "waiting on the centre (ms)",
                ms(c.wait_ms).c_str(), ms(p.wait_ms).c_str());
  out += line;
  row("left at the centre", c.left_at_centre, p.left_at_centre);
  row("stranded on nodes", c.stranded, p.stranded);
  row("fewer admitted than central", c.fewer_than_central, p.fewer_than_central);
  row("rejected while others held quota", c.rejected_while_held, p.rejected_while_held);

  std::snprintf(line, sizeof line, "\n%6s  %-39s %s\n", "", "central", "prefetch");
  out += line;
  std::snprintf(line, sizeof line, "%6s  %8s %8s %8s %11s  %8s %8s %8s %11s\n", "node", "admitted",
                "stranded", "rejected", "round_trips", "admitted", "stranded", "rejected",
                "round_trips");
  out += line;
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    const NodeFigures& a = c.nodes[n];
    const NodeFigures& b = p.nodes[n];
    std::snprintf(line, sizeof line, "%6zu  %8lld %8lld %8lld %11lld  %8lld %8lld %8lld %11lld\n",
                  n, static_cast<long long>(a.admitted), static_cast<long long>(a.stranded),
                  static_cast<long long>(a.rejected), static_cast<long long>(a.round_trips),
                  static_cast<long long>(b.admitted), static_cast<long long>(b.stranded),
                  static_cast<long long>(b.rejected), static_cast<long long>(b.round_trips));
    out += line;
  }
  return out;
}

std::string formatSharingJson(const SharingReport& report) {
  nlohmann::ordered_json modes = nlohmann::ordered_json::array();
  for (const ModeFigures* f : {&report.central, &report.prefetch}) {
    nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
    for (size_t n = 0; n < f->nodes.size(); ++n) {
      const NodeFigures& node = f->nodes[n];
      nlohmann::ordered_json item;
      item["node"] = n;
      item["admitted"] = node.admitted;
      item["stranded"] = node.stranded;
      item["rejected"] = node.rejected;
      item["round_trips"] = node.round_trips;
      nodes.push_back(std::move(item));
    }
    nlohmann::ordered_json mode;
    mode["mode"] = std::string(sharingModeName(f->mode));
    mode["admitted"] = f->admitted;
    mode["rejected"] = f->rejected;
    mode["round_trips"] = f->round_trips;
    mode["wait_ms"] = f->wait_ms;
    mode["left_at_centre"] = f->left_at_centre;
    mode["stranded"] = f->stranded;
    mode["fewer_than_central"] = f->fewer_than_central;
    mode["rejected_while_held"] = f->rejected_while_held;
    mode["nodes"] = std::move(nodes);
    modes.push_back(std::move(mode));
  }
  nlohmann::ordered_json root;
  root["nodes"] = report.nodes;
  root["requests_per_node"] =
      report.requests_per_node ? nlohmann::ordered_json(*report.requests_per_node) : nullptr;
  root["limit"] = report.limit;
  root["batch"] = report.batch;
  root["rtt_ms"] = report.rtt_ms;
  root["modes"] = std::move(modes);
  return root.dump() + "\n";
}

}  // namespace floodgate::http::lab
