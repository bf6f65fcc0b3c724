// SPDX-License-Identifier: MIT
// `floodgate lab`: replay arrival times through one or two algorithms before deploying them,
// or (--sharing) one limit shared by many nodes, charged centrally or prefetched.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "lab/lab_command.h"

namespace floodgate::cli {

void addLabCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<http::lab::LabFlags>();
  CLI::App* lab = app.add_subcommand(
      "lab",
      "Replay arrival times through one or two rate-limit algorithms on a virtual clock, or "
      "(--sharing) compare central counting with prefetch across nodes");
  CLI::Option* algorithm =
      lab->add_option("--algorithm", flags->options.algorithms,
                      "fixed_window | sliding_window_log | sliding_window_counter | "
                      "token_bucket | gcra | leaky_bucket (give it twice to compare two)");
  lab->add_option("--limit", flags->options.limit,
                  "window algorithms: requests per window; --sharing: units at the centre");
  CLI::Option* window =
      lab->add_option("--window", flags->options.window_ms,
                      "window length in ms (default 1000); also the span max_in_window is over");
  CLI::Option* capacity =
      lab->add_option("--capacity", flags->options.capacity,
                      "bucket algorithms: burst size (leaky_bucket: queue depth)");
  CLI::Option* rate =
      lab->add_option("--rate", flags->options.rate_per_s,
                      "bucket algorithms: refill (leaky_bucket: drain) rate per second");
  CLI::Option* cost =
      lab->add_option("--cost", flags->options.cost, "cost of each request (default 1)");
  CLI::Option* arrivals =
      lab->add_option("--arrivals", flags->arrivals, "arrival times in ms, e.g. 0,10,20");

  http::lab::SharingOptions& sharing = flags->sharing_options;
  CLI::Option* sharing_flag =
      lab->add_flag("--sharing", flags->sharing,
                    "one --limit shared by --nodes: every request charged at the centre, against "
                    "prefetching a --batch when a node has nothing left");
  for (CLI::Option* algorithm_only : {algorithm, window, capacity, rate, cost, arrivals}) {
    sharing_flag->excludes(algorithm_only);
  }
  lab->add_option("--nodes", sharing.nodes, "--sharing: nodes sharing the limit")
      ->needs(sharing_flag);
  lab->add_option("--requests", sharing.requests_per_node,
                  "--sharing: requests per node, taken round-robin")
      ->needs(sharing_flag);
  lab->add_option("--batch", sharing.batch,
                  "--sharing: units a node borrows at most per round trip (prefetch.batch)")
      ->needs(sharing_flag);
  lab->add_option("--rtt", sharing.rtt_ms, "--sharing: round trip to the centre in ms (default 1)")
      ->needs(sharing_flag);
  lab->add_option("--node-arrivals", flags->node_arrivals,
                  "--sharing: arrival times in ms of one node (e.g. 0,10,20), once per node, "
                  "instead of --nodes and --requests")
      ->needs(sharing_flag);

  lab->add_flag("--json", flags->json, "print JSON instead of a table");
  lab->add_option("--svg", flags->svg_path,
                  "also draw the timelines (--sharing: each node's quota) into this SVG file");
  lab->callback([&selected, flags] {
    selected = [flags] { return http::lab::runLabCommand(*flags, std::cout); };
  });
}

}  // namespace floodgate::cli
