// SPDX-License-Identifier: MIT
// `floodgate learn`: checks, sampling, printing, writing, applying.
#include "learn/learn_command.h"

#include <fcntl.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "common/json_text.h"
#include "config/floodgate_config.h"
#include "floodgate/common/text.h"
#include "floodgate/common/units.h"
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

// The directory of `path`'s last component, opened one directory at a time without
// following a link, from `/` or the working directory (which the path does not name, so it
// is taken as it is); `name` gets the last component.
Result<UniqueFd> openParentWithoutLinks(const std::string& path, std::string& name) {
  UniqueFd dir(open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return Error::failure(std::strerror(errno));
  size_t start = 0;
  for (;;) {
    start = path.find_first_not_of('/', start);
    const size_t end = path.find('/', start);
    if (end == std::string::npos) break;
    const std::string component = path.substr(start, end - start);
    UniqueFd next(
        openat(dir.get(), component.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) {
      const int error = errno;
      const std::string walked = "'" + path.substr(0, end) + "'";
      char target[256];
      const ssize_t n = readlinkat(dir.get(), component.c_str(), target, sizeof(target) - 1);
      if (n >= 0) {
        return Error::failure(walked + " is a symbolic link (to '" + std::string(target, n) +
                              "'); give a path with no link in it (written as root, --output "
                              "follows none)");
      }
      return Error::failure(walked + ": " + std::strerror(error));
    }
    dir = std::move(next);
    start = end;
  }
  name = path.substr(start);
  return dir;
}

// A name no file of `dir` has, for the text before it is renamed into place.
Result<std::pair<UniqueFd, std::string>> createTemporary(int dir, const std::string& name) {
  std::random_device random;
  for (int attempt = 0; attempt < 16; ++attempt) {
    // a dot name, so a glob for the output's name does not pick it up half written
    const std::string temporary =
        "." + name + "." + std::to_string(getpid()) + "." + std::to_string(random());
    UniqueFd fd(
        openat(dir, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd.valid()) return std::make_pair(std::move(fd), temporary);
    if (errno != EEXIST) break;
  }
  return Error::failure(std::string("cannot create a file beside it: ") + std::strerror(errno));
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

Status applyProposal(XdpLimiter& limiter, const LearnReport& report, std::ostream& out,
                     bool quiet) {
  for (const RuleLearned& rule : report.rules) {
    if (!rule.proposal) continue;
    LimitChange change;
    change.pps = rule.proposal->pps;
    // the window algorithms have no burst: a window admits rate × window
    if (rule.rule.algorithm == Algorithm::kTokenBucket) change.burst = rule.proposal->burst;
    if (Status s = limiter.setLimits(rule.rule.name, change); !s) {
      return Error::failure("applying the proposal to rule '" + rule.rule.name +
                            "' failed: " + s.error().message);
    }
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
  auto failed = [&](const std::string& why) {
    return Error::failure("cannot write the proposal to '" + path + "': " + why);
  };
  if (path.empty() || path.back() == '/') {
    return failed("it names a directory; give the path of a file");
  }
  std::string name;
  auto dir = openParentWithoutLinks(path, name);
  if (!dir) return failed(dir.error().message);
  struct stat st {};
  if (fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) return failed("it is a symbolic link; give the path of a file itself");
    if (!S_ISREG(st.st_mode)) return failed("it is not a regular file; give the path of a file");
  } else if (errno != ENOENT) {
    return failed(std::strerror(errno));
  }
  auto temporary = createTemporary(dir->get(), name);
  if (!temporary) return failed(temporary.error().message);
  const UniqueFd fd = std::move(temporary->first);
  const std::string& temporary_name = temporary->second;
  auto discard = [&](const std::string& why) {
    unlinkat(dir->get(), temporary_name.c_str(), 0);
    return failed(why);
  };
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return discard(std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  if (fsync(fd.get()) != 0) return discard(std::strerror(errno));
  // a rename replaces the name itself, never what a link planted there since points to
  if (renameat(dir->get(), temporary_name.c_str(), dir->get(), name.c_str()) != 0) {
    return discard(std::strerror(errno));
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
    if (raisesTooFar(now.pps, proposed.pps) || (burst && raisesTooFar(now.burst, proposed.burst))) {
      return Error::failure("not applied: the proposal for rule '" + rule.rule.name +
                            "' raises its limit from {pps: " + std::to_string(now.pps) +
                            ", burst: " + std::to_string(now.burst) +
                            "} to {pps: " + std::to_string(proposed.pps) +
                            ", burst: " + std::to_string(proposed.burst) + "}, more than " +
                            std::to_string(kMostApplyFactor) +
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
          "not applied: the proposal for rule '" + rule.rule.name +
          "' ({pps: " + std::to_string(proposed.pps) +
          ", burst: " + std::to_string(proposed.burst) + "}) would have dropped " +
          std::to_string(rule.replay_dropped) + " of the " + std::to_string(rule.replayed_packets) +
          " packets the run saw, more than " + std::to_string(kMostAppliedDropMilli / 10) +
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
