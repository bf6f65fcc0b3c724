// SPDX-License-Identifier: MIT
// `floodgate learn`: checks, sampling, printing, writing, applying.
#include "learn/learn_command.h"

#include <fcntl.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <utility>

#include "common/json_text.h"
#include "config/floodgate_config.h"
#include "controller/rule_compiler.h"
#include "floodgate/common/text.h"
#include "floodgate/common/units.h"
#include "floodgate/common/write_file.h"
#include "kernel/system.h"
#include "kernel/unique_fd.h"
#include "learn/learn_output.h"
#include "learn/limiter_sampler.h"

namespace floodgate::learn {
namespace {

// "99.9" → 99900: a decimal with at most three places, in thousandths.
std::optional<uint64_t> parseMilli(const std::string& text) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  uint64_t whole = 0, fraction = 0;
  size_t i = 0, places = 0;
  for (; i < text.size() && text[i] != '.'; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    whole = whole * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (i == 0) return std::nullopt;
  if (i < text.size()) {
    for (++i; i < text.size(); ++i, ++places) {
      if (text[i] < '0' || text[i] > '9' || places == 3) return std::nullopt;
      fraction = fraction * 10 + static_cast<uint64_t>(text[i] - '0');
    }
    if (places == 0) return std::nullopt;
  }
  for (; places < 3; ++places) fraction *= 10;
  return whole * 1000 + fraction;
}

Result<ConfigRules> readConfigRules(const std::string& path) {
  ConfigRules out;
  out.path = path;
  // the rules and the text the proposal edits come from one read: an edit landing between
  // two reads would otherwise pair the rules of one file with the text of another
  auto config = config::loadValidConfig(path, &out.text);
  if (!config) return config.error();
  out.rules = config->rules;
  return out;
}

// `from` → `to` raises a limit more than kMostApplyFactor times (a limit not set, 0, is
// not raised).
bool raisesTooFar(uint64_t from, uint64_t to) {
  return from != 0 && from <= UINT64_MAX / kMostApplyFactor && to > from * kMostApplyFactor;
}

// The refusal of a proposal for a rule whose limits changed during the run.
Error changedDuringRun(const std::string& rule) {
  return Error::failure("not applied: the limits of rule '" + rule +
                        "' changed during the run (the adaptive governor, floodgate set or a "
                        "reload), and the proposal was checked against those it ran before; "
                        "learn again, or set the limits yourself");
}

Status applyProposal(XdpLimiter& limiter, const LearnReport& report, std::ostream& out,
                     bool quiet) {
  // every rule checked before any changes, under one hold of the writer lock, so a changed
  // one leaves the others as they are and no other writer comes between
  auto writing = limiter.holdWrites();
  if (!writing) return writing.error();
  if (!limiter.holdsPinned()) {
    return Error::failure("not applied: the limiter on '" + limiter.interface() +
                          "' was detached (or detached and attached again) during the run; "
                          "learn again");
  }
  auto running = limiter.activeRules();
  if (!running) return running.error();
  for (const RuleLearned& rule : report.rules) {
    if (!rule.proposal) continue;
    bool same = false;
    for (const fg_rule& now : *running) {
      same |= rule.rule.name == now.name && describeLimits(now) == rule.rule.current;
    }
    if (!same) return changedDuringRun(rule.rule.name);
  }
  for (const RuleLearned& rule : report.rules) {
    if (!rule.proposal) continue;
    LimitChange change;
    change.pps = rule.proposal->pps;
    // the window algorithms have no burst: a window admits rate × window
    if (rule.rule.algorithm == Algorithm::kTokenBucket) change.burst = rule.proposal->burst;
    // only over the limits the run started from, which the refusals above were checked
    // against: a governor that squeezed the rule during the run (a flood), a `set` or a
    // reload is not undone by a proposal made for what it replaced
    auto applied = limiter.setLimitsIfDescribed(rule.rule.name, rule.rule.current, change);
    if (!applied) {
      return Error::failure("applying the proposal to rule '" + rule.rule.name +
                            "' failed: " + applied.error().message);
    }
    if (!*applied) return changedDuringRun(rule.rule.name);
    if (!quiet) {
      out << "applied to " << rule.rule.name << " on " << limiter.interface() << ": pps "
          << *change.pps;
      if (change.burst) out << ", burst " << *change.burst;
      out << "\n";
    }
  }
  return okStatus();
}

}  // namespace

Status writeProposalFile(const std::string& path, const std::string& text) {
  if (Status s = replaceFile(path, text); !s) {
    return Error::failure("cannot write the proposal to '" + path + "': " + s.error().message);
  }
  return okStatus();
}

Status stoppedRefusal(const LearnReport& report) {
  if (!report.stopped) return okStatus();
  const uint64_t seen_ns = report.samples > 1 ? (report.samples - 1) * report.sample_ns : 0;
  return Error::failure("stopped by Ctrl-C after " + formatDuration(seen_ns) + " of " +
                        formatDuration(report.duration_ns) +
                        " sampled: nothing written or applied (a stopped run is not to be used); "
                        "learn again to write or apply");
}

Status applyRefusal(const LearnReport& report) {
  const std::string force =
      "; check the report and apply with --apply --force, or set the "
      "limits yourself (floodgate set, or the config)";
  if (report.sources_beyond_cap > 0) {
    return Error::failure(
        "not applied: the run met more sources than --max-sources (" +
        std::to_string(report.max_sources) +
        "), so its proposals come from the sources that came first, not the typical ones; "
        "learn again with a larger --max-sources" +
        force);
  }
  for (const RuleLearned& rule : report.rules) {
    if (!rule.proposal) continue;
    const LimitSpec& now = rule.rule.current;
    const LimitSpec& proposed = *rule.proposal;
    const bool burst = rule.rule.algorithm == Algorithm::kTokenBucket;
    // as the rule writes them: a window rule has no burst
    auto limit = [burst](const LimitSpec& l) {
      return "{pps: " + std::to_string(l.pps) +
             (burst ? ", burst: " + std::to_string(l.burst) : std::string()) + "}";
    };
    if (raisesTooFar(now.pps, proposed.pps) || (burst && raisesTooFar(now.burst, proposed.burst))) {
      return Error::failure("not applied: the proposal for rule '" + rule.rule.name +
                            "' raises its limit from " + limit(now) + " to " + limit(proposed) +
                            ", more than " + std::to_string(kMostApplyFactor) +
                            " times (a few sources flooding during the run move a "
                            "high percentile that far)" +
                            force);
    }
    if (!rule.not_replayed.empty()) {
      return Error::failure("not applied: what the proposal for rule '" + rule.rule.name +
                            "' would have dropped is not known: the replay was not run (" +
                            rule.not_replayed + ")" + force);
    }
    const auto dropped = static_cast<unsigned __int128>(rule.replay_dropped) * 1000;
    if (dropped > static_cast<unsigned __int128>(rule.replayed_packets) * kMostAppliedDropMilli) {
      return Error::failure(
          "not applied: the proposal for rule '" + rule.rule.name + "' (" + limit(proposed) +
          ") would have dropped " + std::to_string(rule.replay_dropped) + " of the " +
          std::to_string(rule.replayed_packets) + " packets the run saw, more than " +
          std::to_string(kMostAppliedDropMilli / 10) +
          "% (a limit for what is normal drops almost none; a few sources carrying much of "
          "the traffic, as clients behind a NAT, are above a percentile of sources)" +
          force);
    }
  }
  return okStatus();
}

Result<LearnRequest> parseLearnFlags(const LearnFlags& flags) {
  LearnRequest request;
  request.interface = flags.interface;
  request.json = flags.json;
  request.output = flags.output;
  request.diff = flags.diff;
  request.apply = flags.apply;
  request.force = flags.force;
  if (flags.force && !flags.apply) return Error::usage("--force goes with --apply");
  auto duration = parseDuration(flags.duration);
  if (flags.duration.empty() || !duration || *duration == 0 || *duration % kWindowNs != 0 ||
      *duration > kLongestLearnNs) {
    return Error::usage("--for must be whole seconds from 1s to 1h (e.g. 30s or 5m), not '" +
                        flags.duration + "'");
  }
  request.options.duration_ns = *duration;
  auto percentile = parseMilli(flags.percentile);
  if (!percentile || *percentile == 0 || *percentile > 100000) {
    return Error::usage(
        "--percentile must be a number above 0 and at most 100 with at most three decimals "
        "(e.g. 99.9), not '" +
        flags.percentile + "'");
  }
  request.options.percentile_milli = *percentile;
  auto margin = parseMilli(flags.margin);
  if (!margin || *margin < 1000 || *margin > 100000) {
    return Error::usage(
        "--margin must be a factor from 1 to 100 with at most three decimals "
        "(e.g. 1.5), not '" +
        flags.margin + "'");
  }
  request.options.margin_milli = *margin;
  if (flags.max_sources == 0 || flags.max_sources > kMostSources) {
    return Error::usage("--max-sources must be from 1 to 10000000, not " +
                        std::to_string(flags.max_sources));
  }
  request.options.max_sources = flags.max_sources;
  return request;
}

Status runLearnCommand(const LearnFlags& flags, std::ostream& out, const std::atomic<bool>* stop) {
  auto request = parseLearnFlags(flags);
  if (!request) return request.error();
  if (Status s = checkInterfaceName(request->interface); !s) return s;
  if (if_nametoindex(request->interface.c_str()) == 0) {
    return Error::failure("no network interface named '" + request->interface +
                          "' (see 'ip link'; in a namespace, run floodgate inside it)");
  }
  if (Status s = checkPrivileges(); !s) return s;
  auto limiter = XdpLimiter::open(request->interface);
  if (!limiter) return limiter.error();
  // a config to diff against is read before the run, so a bad one costs no waiting
  std::optional<ConfigRules> config;
  if (!request->diff.empty()) {
    auto read = readConfigRules(request->diff);
    if (!read) return read.error();
    config = std::move(*read);
  }
  auto rules = learnRules(*limiter);
  if (!rules) return rules.error();
  if (rules->empty()) {
    return Error::failure("the limiter on '" + request->interface +
                          "' has no rules to learn for (attach it with --rate or --config)");
  }
  auto hz = kernelHz();
  if (!hz) return hz.error();
  request->options.hz = *hz;

  LimiterSampler sampler(*limiter);
  SteadyLearnClock clock(stop);
  // on stderr, so --json output stays one document: the limits the run is checked against
  // are read, and what is sent from here on is what it learns from
  std::cerr << "floodgate: learning from " << request->interface << " for "
            << formatDuration(request->options.duration_ns) << " (Ctrl-C stops it early)"
            << std::endl;
  auto report = runLearning(sampler, clock, request->options, *rules);
  if (!report) return report.error();
  // a Ctrl-C during the last sample or the replay stops the run as well
  if (stop && stop->load()) report->stopped = true;

  if (request->json) {
    nlohmann::json json = reportJson(request->interface, *report);
    if (config) json["diff"] = proposalDiff(*config, *report);
    json["apply"] = request->apply;  // asked for: applied after this is printed
    out << jsonText(json) << "\n";
  } else {
    out << reportText(request->interface, *report);
    if (config) out << "\n" << proposalDiff(*config, *report);
  }
  out.flush();
  if (!request->output.empty() || request->apply) {
    // and one while the report was printed
    if (stop && stop->load()) report->stopped = true;
    if (Status s = stoppedRefusal(*report); !s) return s;
  }
  if (!request->output.empty()) {
    if (Status s = writeProposalFile(request->output, proposalYaml(request->interface, *report));
        !s) {
      return s;
    }
  }
  if (!request->apply) return okStatus();
  if (!request->force) {
    if (Status s = applyRefusal(*report); !s) return s;
  }
  return applyProposal(*limiter, *report, out, request->json);
}

}  // namespace floodgate::learn
