// SPDX-License-Identifier: MIT
// floodgate_xdp_cost: nanoseconds per packet under BPF_PROG_TEST_RUN of a bare XDP_DROP and
// of floodgate in the configurations bench.sh reports (1 rule; 16 rules of which one or all
// match; 100k-prefix allow and deny lists) and those docs/performance.md splits the cost by
// (no rule; a global rule; a source over its limit; a new source the new-source cap refuses,
// as every packet of a spoofed flood), and 1 rule chained by a tail call to a
// next program that returns XDP_PASS (against 1 rule, whose pass falls through the empty
// slot), and a global rule ahead of a per-source rule that admits the source, and one that
// drops it, on one CPU and on two at once. Prints one line per case,
// "name<TAB>ns_per_packet", the best of --runs runs.
// Three cases run each of many frames once instead of one frame many times, so the lines a
// source's packet reads are as cold as a flood leaves them: a spoofed flood from 262,144
// sources under the new-source cap, 65,536 tracked sources each over its limit (the first
// run takes their slots, the best run is one of the later ones), and the bare drop on the
// spoofed frames as their baseline (each run then also pays the kernel's clock reads around
// it, the baseline too).
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "controller/next_program.h"
#include "controller/xdp_limiter.h"
#include "fg_gcra.h"
#include "flood/frame_builder.h"
#include "kernel/pins.h"
#include "kernel/system.h"
#include "xdp_drop.skel.h"

namespace {

using namespace floodgate;

struct DropDeleter {
  void operator()(xdp_drop_bpf* skeleton) const { xdp_drop_bpf__destroy(skeleton); }
};

// Removes a loaded limiter's pins when the case is over, however it ends.
struct PinsGuard {
  std::string name;
  ~PinsGuard() { (void)removePins(name); }
};

// The average ns of one run of `program_fd` on `frame` over `repeat` runs, best of `runs`.
// The kernel's own timing: it leaves out the time the run was preempted, which a clock
// around the syscall would count on a shared machine; it truncates to whole ns.
// `before_run`, if set, is called before each run.
Result<double> nsPerPacket(int program_fd, const std::vector<uint8_t>& frame, uint32_t repeat,
                           int runs, const std::function<Status()>& before_run = {}) {
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    if (before_run) {
      if (Status s = before_run(); !s) return s.error();
    }
    LIBBPF_OPTS(bpf_test_run_opts, opts);
    opts.data_in = frame.data();
    opts.data_size_in = static_cast<uint32_t>(frame.size());
    opts.repeat = repeat;
    if (bpf_prog_test_run_opts(program_fd, &opts) != 0) {
      return Error::failure(std::string("BPF_PROG_TEST_RUN failed: ") + std::strerror(errno));
    }
    best = std::min(best, static_cast<double>(opts.duration));
  }
  return best;
}

// The first two CPUs this process may run on (fewer if it may not run on two).
std::vector<int> firstTwoCpus() {
  cpu_set_t allowed;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
      if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
    }
  }
  return cpus;
}

// The average ns per packet of one run of `frame` on one CPU and one of `other` (a frame
// from another source) on a second CPU, started together, best of `runs`: what the
// program's writes to memory both CPUs share cost when they contend, as in a flood from
// many sources spread over a NIC's queues. The two CPUs are the first two this process may
// run on (on an SMT machine they may be one core's two threads, which share a cache).
Result<double> nsPerPacketOnTwoCpus(int program_fd, const std::vector<uint8_t>& frame,
                                    const std::vector<uint8_t>& other, uint32_t repeat, int runs) {
  const std::vector<int> cpus = firstTwoCpus();
  if (cpus.size() < 2) return Error::failure("two CPUs are needed to run on, this has fewer");
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    std::atomic<int> ready{0};
    Result<double> ns[2] = {0.0, 0.0};
    auto run = [&](int which) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[which], &set);
      if (int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); err != 0) {
        ns[which] = Error::failure("cannot run on CPU " + std::to_string(cpus[which]) + ": " +
                                   std::strerror(err));
        ready.fetch_add(1);
        return;
      }
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      ns[which] = nsPerPacket(program_fd, which ? other : frame, repeat, 1);
    };
    std::thread first(run, 0), second(run, 1);
    first.join();
    second.join();
    for (const Result<double>& r : ns) {
      if (!r) return r;
    }
    best = std::min(best, (*ns[0] + *ns[1]) / 2);
  }
  return best;
}

// One frame from each of `count` sources (counted up from 100.64.0.0), else as `spec`.
Result<std::vector<std::vector<uint8_t>>> framesFromSources(flood::FrameSpec spec, uint32_t count) {
  std::vector<std::vector<uint8_t>> frames;
  frames.reserve(count);
  const uint32_t first = 0x64400000u;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t address = first + i;
    for (int b = 0; b < 4; ++b) spec.source.addr[b] = static_cast<uint8_t>(address >> (24 - 8 * b));
    auto frame = flood::buildFrame(spec);
    if (!frame) return frame.error();
    frames.push_back(std::move(frame->frame));
  }
  return frames;
}

// Frames of a spoofed-source case between two calls of its `before_run` (which re-arms the
// new-source cap well within the second it refuses for, however slow a run is).
constexpr size_t kFramesPerArming = 16384;

// The average ns of one run of `program_fd` on each of the first `count` of `frames` in
// turn, best of `runs`. One run a frame: a source's lines are as cold as in a flood.
Result<double> nsPerColdPacket(int program_fd, const std::vector<std::vector<uint8_t>>& frames,
                               size_t count, int runs,
                               const std::function<Status()>& before_run = {}) {
  double best = 1e300;
  count = std::min(count, frames.size());
  for (int i = 0; i < runs; ++i) {
    uint64_t total = 0;
    for (size_t f = 0; f < count; ++f) {
      if (before_run && f % kFramesPerArming == 0) {
        if (Status s = before_run(); !s) return s.error();
      }
      LIBBPF_OPTS(bpf_test_run_opts, opts);
      opts.data_in = frames[f].data();
      opts.data_size_in = static_cast<uint32_t>(frames[f].size());
      opts.repeat = 1;
      if (bpf_prog_test_run_opts(program_fd, &opts) != 0) {
        return Error::failure(std::string("BPF_PROG_TEST_RUN failed: ") + std::strerror(errno));
      }
      total += opts.duration;
    }
    best = std::min(best, static_cast<double>(total) / static_cast<double>(count));
  }
  return best;
}

// A per-source rule high enough that every packet passes and updates its bucket.
RuleSpec passingRule(const std::string& name) {
  RuleSpec rule;
  rule.name = name;
  rule.limit.pps = 1'000'000'000;
  rule.limit.burst = 1'000'000'000;
  return rule;
}

// `count` random IPv4 prefixes (/16 to /32) outside 198.18.0.0/15, where the frame is from.
std::vector<Cidr> randomPrefixes(size_t count, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<Cidr> out;
  out.reserve(count);
  while (out.size() < count) {
    uint32_t address = random();
    if ((address >> 17) == (0xc6120000u >> 17)) continue;
    Cidr cidr;
    cidr.family = Family::kV4;
    cidr.prefix = static_cast<uint8_t>(16 + random() % 17);
    for (int i = 0; i < 4; ++i) cidr.addr[i] = static_cast<uint8_t>(address >> (24 - 8 * i));
    maskAddress(cidr.addr, cidr.prefix);
    out.push_back(cidr);
  }
  return out;
}

// A per-source rule the bench frame (UDP to port 9) does not match: TCP to port 80.
RuleSpec otherRule(const std::string& name) {
  RuleSpec rule = passingRule(name);
  rule.protocol = Protocol::kTcp;
  rule.dst_ports = {PortRange{80, 80}};
  return rule;
}

// One case: the rules (and lists) floodgate is loaded with, and whether a next program
// gets what it passes.
struct Case {
  const char* name;
  std::vector<RuleSpec> rules;
  size_t list_prefixes = 0;
  bool chained = false;
  bool cap_refuses = false;   // the new-source cap refuses every source for the whole run
  uint32_t cold_sources = 0;  // > 0: a frame from each of as many sources, once a run
  bool two_cpus = false;      // the frame run on two CPUs at once (nsPerPacketOnTwoCpus)
};

// Sources of the spoofed cold case: a table's worth, so their sets (and memory entries) are
// spread over the whole of the sets' index; and of the tracked one, as in bench.sh's 64k row.
constexpr uint32_t kSpoofedColdSources = FG_DEFAULT_TABLE_SLOTS;
constexpr uint32_t kTrackedColdSources = 65536;

// Runs the new-source cap of every rule of the limiter pinned as `name` into the debt of a
// second past its burst, which it can only owe after a limit was lowered: it then refuses
// every new source for that second. Armed again before each run, which takes milliseconds.
Status capRefusesAll(const std::string& name) {
  auto rules = BpfMap<uint32_t, fg_rule>::openPinned(mapPinPath(name, "rules"), "rules");
  if (!rules) return rules.error();
  auto states =
      BpfMap<uint32_t, fg_rule_state>::openPinned(mapPinPath(name, "rule_state"), "rule_state");
  if (!states) return states.error();
  auto hz = kernelHz();
  if (!hz) return hz.error();
  auto jiffies = currentJiffies();
  if (!jiffies) return jiffies.error();
  const uint64_t now = *jiffies * fg_tick_units(*hz);
  for (uint32_t pos = 0; pos < FG_MAX_RULES * FG_RULE_SETS; ++pos) {
    auto rule = rules->lookup(pos);
    if (!rule) return rule.error();
    if (!rule->new_sources.interval) continue;
    auto state = states->lookup(rule->id);
    if (!state) return state.error();
    // ahead by more than the burst refuses; by more than the burst and a second, the
    // program would take it for a time that wrapped around, hence half of it
    state->new_source_state = now + rule->new_sources.capacity + FG_STALE_MAX_UNITS / 2;
    if (Status s = states->update(rule->id, *state); !s) return s;
  }
  return okStatus();
}

// Sources that took a slot under any rule of the limiter pinned as `name`, on every CPU.
Result<uint64_t> newSourcesTaken(const std::string& name) {
  auto stats = PerCpuArray<uint64_t>::openPinned(mapPinPath(name, "table_stats"), "table_stats");
  if (!stats) return stats.error();
  uint64_t taken = 0;
  for (uint32_t id = 0; id < FG_MAX_RULE_IDS; ++id) {
    auto counts = stats->lookup(FG_TABLE_STAT_INDEX(id, FG_TABLE_NEW_SOURCE));
    if (!counts) return counts.error();
    for (uint64_t count : *counts) taken += count;
  }
  return taken;
}

// The cheapest next program: `return XDP_PASS`, so a chained case measures the tail call.
UniqueFd bareXdpPass() {
  bpf_insn code[2] = {};
  code[0].code = BPF_ALU64 | BPF_MOV | BPF_K;  // r0 = XDP_PASS
  code[0].imm = XDP_PASS;
  code[1].code = BPF_JMP | BPF_EXIT;
  LIBBPF_OPTS(bpf_prog_load_opts, options, .expected_attach_type = BPF_XDP);  // as floodgate's
  return UniqueFd(bpf_prog_load(BPF_PROG_TYPE_XDP, "xdp_pass", "GPL", code, 2, &options));
}

// Puts `program` behind the loaded limiter pinned as `name`.
Status chainTo(const std::string& name, int program) {
  auto array = ProgArray::openPinned(mapPinPath(name, "next_program"));
  if (!array) return array.error();
  return array->set(FG_NEXT_PROGRAM_SLOT, program);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"floodgate_no_rules", {}});
  RuleSpec global = passingRule("global");
  global.key = KeyKind::kGlobal;
  out.push_back({"floodgate_1_global_rule", {global}});
  out.push_back({"floodgate_1_rule", {passingRule("r0")}});
  out.push_back({"floodgate_1_rule_chained", {passingRule("r0")}, 0, true});
  // the source is over its limit after one packet: the path of almost every flood packet
  RuleSpec strict = passingRule("strict");
  strict.limit.pps = 1;
  strict.limit.burst = 1;
  out.push_back({"floodgate_1_rule_over_limit", {strict}});
  // a source without a slot that the new-source cap refuses: the path of a spoofed flood's
  // packets, each from a source never seen (here with every line it reads in the cache)
  out.push_back({"floodgate_1_rule_new_source_capped", {passingRule("r0")}, 0, false, true});
  // the same, a new source each packet: the lines it reads are as cold as in a flood
  out.push_back(
      {"floodgate_spoofed_cold", {passingRule("r0")}, 0, false, true, kSpoofedColdSources});
  // every source owns a slot (no new-source cap) and is over its limit
  RuleSpec tracked = strict;
  tracked.new_sources_per_s = 0;
  out.push_back({"floodgate_tracked_cold", {tracked}, 0, false, false, kTrackedColdSources});
  // a global rule ahead of a per-source one: the source admitted; and dropped by it, a flood
  // over its sources' limits behind a global cap, on one CPU and on two at once (the global
  // bucket is the one line both would write)
  out.push_back({"floodgate_global_then_rule", {global, passingRule("r0")}});
  out.push_back({"floodgate_global_then_over_limit", {global, strict}});
  Case global_two_cpus{"floodgate_global_then_over_limit_2cpus", {global, strict}};
  global_two_cpus.two_cpus = true;
  out.push_back(global_two_cpus);
  Case one_of_16{"floodgate_16_rules_1_matches", {}};
  for (int i = 0; i < 15; ++i) one_of_16.rules.push_back(otherRule("other" + std::to_string(i)));
  one_of_16.rules.push_back(passingRule("match"));
  out.push_back(one_of_16);
  Case all_16{"floodgate_16_rules", {}};
  for (int i = 0; i < 16; ++i) all_16.rules.push_back(passingRule("r" + std::to_string(i)));
  out.push_back(all_16);
  out.push_back({"floodgate_lists_100k", {passingRule("r0")}, 100'000});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t repeat = 1'000'000;
  int runs = 5;
  CLI::App app{"ns per packet of XDP programs under BPF_PROG_TEST_RUN"};
  app.add_option("--repeat", repeat, "Runs per measurement");
  app.add_option("--runs", runs, "Measurements per case; the best is printed");
  std::vector<std::string> only;
  app.add_option(
      "--case", only,
      "Measure only this case (repeatable; the bare drop is measured too, in at most 3 runs), "
      "e.g. to profile one path with perf");
  CLI11_PARSE(app, argc, argv);
  for (const std::string& name : only) {
    auto all = cases();
    if (std::none_of(all.begin(), all.end(), [&](const Case& c) { return c.name == name; })) {
      std::cerr << "floodgate_xdp_cost: error: no case " << name
                << "; the cases are the names this tool prints without --case\n";
      return 1;
    }
  }
  if (geteuid() != 0) {
    std::cerr << "floodgate_xdp_cost: error: loading BPF programs needs root\n";
    return 1;
  }

  flood::FrameSpec spec;
  spec.source = *parseAddress("198.18.100.1");
  spec.destination = *parseAddress("198.18.0.1");
  auto frame = flood::buildFrame(spec);
  if (!frame) return std::cerr << frame.error().message << "\n", 1;

  auto cold_frames = framesFromSources(spec, kSpoofedColdSources);
  if (!cold_frames) return std::cerr << cold_frames.error().message << "\n", 1;

  auto report = [&](const char* name, int program_fd,
                    const std::function<Status()>& before_run = {}, int case_runs = 0,
                    uint32_t cold_sources = 0, bool two_cpus = false) -> bool {
    const int n = case_runs ? case_runs : runs;
    if (two_cpus && firstTwoCpus().size() < 2) {  // a row without a figure, not an error
      std::printf("%s\tn/a\n", name);
      std::cerr << "floodgate_xdp_cost: " << name << ": needs two CPUs to run on\n";
      return true;
    }
    auto ns =
        cold_sources
            ? nsPerColdPacket(program_fd, *cold_frames, cold_sources, std::min(n, 3), before_run)
        : two_cpus ? nsPerPacketOnTwoCpus(program_fd, frame->frame, (*cold_frames)[0], repeat, n)
                   : nsPerPacket(program_fd, frame->frame, repeat, n, before_run);
    if (!ns) {
      std::cerr << "floodgate_xdp_cost: error: " << name << ": " << ns.error().message << "\n";
      return false;
    }
    std::printf("%s\t%.1f\n", name, *ns);
    std::fflush(stdout);
    return true;
  };

  std::unique_ptr<xdp_drop_bpf, DropDeleter> drop(xdp_drop_bpf__open_and_load());
  if (!drop) return std::cerr << "floodgate_xdp_cost: error: cannot load xdp_drop\n", 1;
  // with --case, a few runs of the bare drop: the case is what is measured (or profiled,
  // scripts/profile_xdp.sh, which waits for its program while the bare drop runs)
  if (!report("bare_xdp_drop", bpf_program__fd(drop->progs.xdp_drop), {},
              only.empty() ? runs : std::min(runs, 3)))
    return 1;
  const bool any_cold = only.empty() || std::any_of(only.begin(), only.end(), [](auto& name) {
                          return name.find("_cold") != std::string::npos;
                        });
  if (any_cold && !report("bare_xdp_drop_cold", bpf_program__fd(drop->progs.xdp_drop), {}, 0,
                          kSpoofedColdSources))
    return 1;

  for (const Case& c : cases()) {
    if (!only.empty() && std::find(only.begin(), only.end(), c.name) == only.end()) continue;
    PinsGuard pins{"bench-cost-" + std::to_string(getpid()) + "-" + c.name};
    AttachOptions options;
    options.interface = pins.name;
    options.rules = c.rules;
    if (c.list_prefixes) {
      options.allow = randomPrefixes(c.list_prefixes, 1);
      options.deny = randomPrefixes(c.list_prefixes, 2);
    }
    auto loaded = XdpLimiter::load(options);
    if (!loaded) {
      std::cerr << "floodgate_xdp_cost: error: " << c.name << ": " << loaded.error().message
                << "\n";
      return 1;
    }
    if (c.chained) {
      UniqueFd next = bareXdpPass();
      Status chained = next.valid() ? chainTo(pins.name, next.get())
                                    : Status(Error::failure("cannot load a bare XDP_PASS"));
      if (!chained) {
        std::cerr << "floodgate_xdp_cost: error: " << c.name << ": " << chained.error().message
                  << "\n";
        return 1;
      }
    }
    if (!c.cap_refuses) {
      if (!report(c.name, loaded->programFd(), {}, 0, c.cold_sources, c.two_cpus)) return 1;
      continue;
    }
    if (!report(
            c.name, loaded->programFd(), [&] { return capRefusesAll(pins.name); }, 0,
            c.cold_sources))
      return 1;
    // a source that took a slot after all would have made later runs measure another path
    auto taken = newSourcesTaken(pins.name);
    if (!taken || *taken != 0) {
      std::cerr << "floodgate_xdp_cost: error: " << c.name << ": "
                << (taken ? "the new-source cap let the source take a slot during the run"
                          : taken.error().message)
                << "\n";
      return 1;
    }
  }
  return 0;
}
