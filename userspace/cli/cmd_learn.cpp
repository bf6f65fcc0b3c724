// SPDX-License-Identifier: MIT
// `floodgate learn IFACE --for DURATION [--percentile 99.9] [--margin 1.5] [--json]
// [--output FILE] [--diff CONFIG] [--apply]`: what per-source rates are normal, and a limit.
#include <signal.h>

#include <atomic>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "learn/learn_command.h"

namespace floodgate::cli {
namespace {

std::atomic<bool> learn_interrupted{false};

Status runLearn(const learn::LearnFlags& flags) {
  learn_interrupted = false;
  struct sigaction action {};
  action.sa_handler = [](int) { learn_interrupted = true; };
  action.sa_flags = SA_RESETHAND;  // a second Ctrl-C ends the command at once
  sigaction(SIGINT, &action, nullptr);
  return learn::runLearnCommand(flags, std::cout, &learn_interrupted);
}

}  // namespace

void addLearnCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<learn::LearnFlags>();
  CLI::App* cmd = app.add_subcommand(
      "learn", "Watch each rule's per-source rates for a while and propose limits for them");
  cmd->footer(
      "Prints, per rule keyed by source: the sources seen; the p50, p99, p99.9 and max of "
      "every source's packets/s and bits/s over 1 s windows (bits priced at the rule's mean "
      "frame size) and of its bursts (the most packets it sent in one 100ms sample interval); "
      "a limit of pps = percentile x margin of the packet rates and burst = the same of the "
      "bursts, rounded up; and the share of the traffic that limit would have dropped, "
      "replayed through the program's bucket arithmetic. Changes nothing unless --apply.");
  addInterfaceArgument(cmd, flags->interface, "Interface with a limiter attached")->required();
  cmd->add_option("--for", flags->duration, "How long to watch: whole seconds, 1s to 1h (30s, 5m)")
      ->required();
  cmd->add_option("--percentile", flags->percentile,
                  "Percentile of the per-source 1 s rates and bursts the proposal starts from")
      ->capture_default_str();
  cmd->add_option("--margin", flags->margin, "Factor the proposal adds on top, 1 to 100")
      ->capture_default_str();
  cmd->add_option("--max-sources", flags->max_sources,
                  "Sources followed at most (beyond: counted, not followed)")
      ->capture_default_str();
  cmd->add_flag("--json", flags->json, "The report as JSON");
  cmd->add_option("--output", flags->output,
                  "Write the proposal to FILE as a YAML rules: fragment (no symbolic link in "
                  "its path is followed)");
  cmd->add_option("--diff", flags->diff, "Print the proposal as a diff of limits against CONFIG");
  cmd->add_flag("--apply", flags->apply,
                "After printing, set the proposed limits on the running limiter (as 'floodgate "
                "set' does: buckets kept); refused if the run met more sources than "
                "--max-sources, a limit would rise more than 4 times, the replay could not "
                "tell what a proposal drops, or it would have dropped more than 1% of the run");
  cmd->add_flag("--force", flags->force, "With --apply: apply past those checks");
  cmd->callback([flags, &selected] { selected = [flags] { return runLearn(*flags); }; });
}

}  // namespace floodgate::cli
