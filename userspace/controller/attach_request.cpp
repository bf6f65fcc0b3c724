// SPDX-License-Identifier: MIT
// The command line of `attach` as options: defaults for a fresh attach, the running
// limiter's settings for what a `--replace` left out.
#include "controller/attach_request.h"

#include "controller/rule_compiler.h"

namespace floodgate {
namespace {

bool limitGiven(const AttachRequest& request) {
  const LimitChange& l = request.limit;
  return l.pps || l.burst || l.bits_per_s || l.burst_bytes || request.ipv4_prefix ||
         request.ipv6_prefix;
}

void applyLimit(const AttachRequest& request, RuleSpec& rule) {
  const LimitChange& l = request.limit;
  if (l.pps) rule.limit.pps = *l.pps;
  if (l.burst) rule.limit.burst = *l.burst;
  if (l.bits_per_s) rule.limit.bits_per_s = *l.bits_per_s;
  if (l.burst_bytes) rule.limit.burst_bytes = *l.burst_bytes;
  if (request.ipv4_prefix) rule.ipv4_prefix = *request.ipv4_prefix;
  if (request.ipv6_prefix) rule.ipv6_prefix = *request.ipv6_prefix;
}

// Whether `rule` is one `attach --rate/--bps` makes: a per-source token bucket on every
// packet that drops, with nothing but its limits and prefixes set.
bool commandLineRule(const fg_rule& rule) {
  return rule.protocol == 0 && rule.key_kind == FG_KEY_SOURCE && rule.action == FG_ACTION_DROP &&
         !rule.tcp_flags_set && !rule.tcp_flags_clear && !rule.port_ranges &&
         rule.algorithm == FG_ALG_TOKEN_BUCKET && !rule.has_sources && !rule.untracked_own;
}

}  // namespace

Result<AttachOptions> freshAttachOptions(const AttachRequest& request) {
  AttachOptions options;
  options.interface = request.interface;
  options.mode = request.mode;
  options.monitor = request.monitor.value_or(false);
  if (request.table_slots) options.table_slots = *request.table_slots;
  if (request.malformed) options.malformed = *request.malformed;
  if (request.fragments) options.fragments = *request.fragments;
  if (request.unknown_ext) options.unknown_ext = *request.unknown_ext;
  if (request.link_control) options.link_control = *request.link_control;
  if (!request.limit.pps && !request.limit.bits_per_s) {
    return Error::usage("give a limit: --rate PPS and/or --bps RATE (e.g. --rate 10k)");
  }
  RuleSpec rule;
  applyLimit(request, rule);
  options.rules.push_back(rule);
  return options;
}

Result<AttachOptions> replaceAttachOptions(const AttachRequest& request,
                                           const XdpLimiterStatus& running) {
  AttachOptions options;
  options.interface = request.interface;
  options.replace = true;
  options.mode = request.mode;
  options.monitor = request.monitor.value_or(running.monitor);
  options.table_slots = request.table_slots.value_or(running.table_slots);
  if (running.list_max_entries) options.list_max_entries = running.list_max_entries;
  const fg_settings& now = running.settings;
  options.malformed = request.malformed.value_or(static_cast<FramePolicy>(now.malformed_policy));
  options.fragments = request.fragments.value_or(static_cast<FramePolicy>(now.fragment_policy));
  options.unknown_ext =
      request.unknown_ext.value_or(static_cast<FramePolicy>(now.unknown_ext_policy));
  options.link_control = request.link_control.value_or(describeLinkControl(now.link_control));
  if (!limitGiven(request)) {
    options.keep_rules = true;
    return options;
  }
  if (running.rules.size() != 1 || !commandLineRule(running.rules[0])) {
    std::string names;
    for (const fg_rule& rule : running.rules) {
      names += (names.empty() ? "'" : ", '") + std::string(rule.name) + "'";
    }
    return Error::usage(
        "'" + request.interface + "' runs " + std::to_string(running.rules.size()) +
        " rules from a config (" + (names.empty() ? "none" : names) +
        "), which limits or prefixes given to --replace would replace with one rule: change a "
        "rule with 'floodgate set " +
        request.interface + " RULE --pps N', or give the config with --replace --config FILE");
  }
  const fg_rule& rule = running.rules[0];
  RuleSpec spec;
  spec.name = rule.name;
  spec.ipv4_prefix = rule.ipv4_prefix;
  spec.ipv6_prefix = rule.ipv6_prefix;
  spec.limit = describeLimits(rule);
  spec.new_sources_per_s = describeNewSources(rule);
  applyLimit(request, spec);
  options.rules.push_back(spec);
  return options;
}

Result<AttachOptions> attachOptions(const AttachRequest& request, bool replace) {
  if (!replace || !XdpLimiter::attachedTo(request.interface)) {
    auto options = freshAttachOptions(request);
    if (options) options->replace = replace;
    return options;
  }
  auto limiter = XdpLimiter::open(request.interface);
  if (!limiter) return limiter.error();
  auto running = limiter->status();
  if (!running) return running.error();
  return replaceAttachOptions(request, *running);
}

}  // namespace floodgate
