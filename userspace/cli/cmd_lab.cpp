// SPDX-License-Identifier: MIT
// `floodgate lab`: replay arrival times through one or two algorithms before deploying them.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "lab/lab_command.h"

namespace floodgate::cli {

void addLabCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<http::lab::LabFlags>();
  CLI::App* lab = app.add_subcommand(
      "lab", "Replay arrival times through one or two rate-limit algorithms on a virtual clock");
  lab->add_option("--algorithm", flags->options.algorithms,
                  "fixed_window | sliding_window_log | sliding_window_counter | token_bucket | "
                  "gcra | leaky_bucket (give it twice to compare two)")
      ->required();
  lab->add_option("--limit", flags->options.limit, "window algorithms: requests per window");
  lab->add_option("--window", flags->options.window_ms,
                  "window length in ms (default 1000); also the span max_in_window is over");
  lab->add_option("--capacity", flags->options.capacity,
                  "bucket algorithms: burst size (leaky_bucket: queue depth)");
  lab->add_option("--rate", flags->options.rate_per_s,
                  "bucket algorithms: refill (leaky_bucket: drain) rate per second");
  lab->add_option("--cost", flags->options.cost, "cost of each request (default 1)");
  lab->add_option("--arrivals", flags->arrivals, "arrival times in ms, e.g. 0,10,20")->required();
  lab->add_flag("--json", flags->json, "print JSON instead of a table");
  lab->add_option("--svg", flags->svg_path, "also draw the timelines into this SVG file");
  lab->callback([&selected, flags] {
    selected = [flags] { return http::lab::runLabCommand(*flags, std::cout); };
  });
}

}  // namespace floodgate::cli
