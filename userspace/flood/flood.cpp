// SPDX-License-Identifier: MIT
// The send loop of `floodgate flood`: chunks of live frames, paced, bounded by count and
// time, with a first small chunk that proves a veth peer takes XDP frames at all.
#include "flood/flood.h"

#include <sched.h>
#include <time.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "flood/flood_program.h"
#include "flood/pacer.h"
#include "flood/send_loop.h"
#include "floodgate/common/units.h"
#include "kernel/system.h"

namespace floodgate::flood {
namespace {

// 4671933.2 -> 4670000, which formatCount writes as 4.67M.
uint64_t threeDigits(double value) {
  if (value < 1000) return static_cast<uint64_t>(value);
  const double scale = std::pow(10.0, std::floor(std::log10(value)) - 2);
  return static_cast<uint64_t>(std::round(value / scale) * scale);
}

std::string vethHelp(const std::string& interface) {
  return "the peer of veth '" + interface +
         "' takes no XDP frames: both ends must be up, and the peer needs an XDP program "
         "(e.g. 'floodgate attach PEER') or GRO ('ethtool -K PEER gro on')";
}

// The kernel side of the send loop: BPF_PROG_RUN calls on a CLOCK_MONOTONIC clock. The
// first call is one batch, and after it a veth peer must have taken something: a peer
// without NAPI drops frames uncounted, and saying so after one batch beats flooding into
// nothing for the whole duration.
class KernelSendDriver final : public SendDriver {
 public:
  KernelSendDriver(FloodProgram& program, int ifindex, uint32_t batch, const std::string& interface,
                   std::optional<VethXdpCounters> veth_before)
      : program_(program),
        ifindex_(ifindex),
        batch_(batch),
        interface_(interface),
        veth_before_(veth_before) {}

  uint64_t nowNs() override {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
  }

  void sleepNs(uint64_t ns) override {
    timespec ts{static_cast<time_t>(ns / 1'000'000'000ULL),
                static_cast<long>(ns % 1'000'000'000ULL)};
    nanosleep(&ts, nullptr);
  }

  Result<uint64_t> send(uint64_t frames) override {
    auto went = program_.send(ifindex_, static_cast<uint32_t>(frames), batch_);
    if (!went || *went < frames || !veth_before_) return went;
    auto counters = vethXdpCounters(interface_);
    if (!counters) return counters.error();
    if (counters->xmit == veth_before_->xmit && counters->errors == veth_before_->errors) {
      return Error::failure(vethHelp(interface_));
    }
    veth_before_.reset();  // proved once is enough
    return went;
  }

 private:
  FloodProgram& program_;
  int ifindex_;
  uint32_t batch_;
  const std::string& interface_;
  std::optional<VethXdpCounters> veth_before_;  // until the peer has taken a frame
};

// Runs the calling thread on one CPU until destroyed, then where it could run before.
class PinnedToCpu {
 public:
  static Result<PinnedToCpu> pin(int cpu) {
    PinnedToCpu pinned;
    if (sched_getaffinity(0, sizeof(pinned.before_), &pinned.before_) != 0) {
      return Error::failure(std::string("cannot read this thread's CPUs: ") + std::strerror(errno));
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) {
      return Error::usage("--cpu " + std::to_string(cpu) +
                          ": not a CPU this process may run on (it may run on " +
                          cpuList(pinned.before_) + ")");
    }
    pinned.active_ = true;
    return pinned;
  }
  PinnedToCpu(PinnedToCpu&& other) noexcept
      : before_(other.before_), active_(std::exchange(other.active_, false)) {}
  PinnedToCpu& operator=(PinnedToCpu&&) = delete;
  ~PinnedToCpu() {
    if (active_) sched_setaffinity(0, sizeof(before_), &before_);
  }

 private:
  PinnedToCpu() { CPU_ZERO(&before_); }
  // "0-3,6"
  static std::string cpuList(const cpu_set_t& set) {
    std::string out;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &set)) continue;
      int last = cpu;
      while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
      out += (out.empty() ? "" : ",") + std::to_string(cpu) +
             (last > cpu ? "-" + std::to_string(last) : "");
      cpu = last;
    }
    return out;
  }

  cpu_set_t before_;
  bool active_ = false;
};

}  // namespace

Status validateFloodOptions(const FloodOptions& options) {
  if (options.count == 0 && options.duration_ns == 0) {
    return Error::usage("give --count N or --duration TIME (e.g. --duration 5s)");
  }
  if (options.duration_ns > 3600ULL * 1'000'000'000ULL) {
    return Error::usage("--duration is at most 1h: a rehearsal flood should end on its own");
  }
  if (options.cpu < -1 || options.cpu >= CPU_SETSIZE) {
    return Error::usage("--cpu must be a CPU number, 0.." + std::to_string(CPU_SETSIZE - 1) +
                        " (or -1: any)");
  }
  if (options.batch == 0 || options.batch > 256) {
    return Error::usage("--batch must be 1..256 (the kernel's limit for live frames)");
  }
  auto frame = buildFrame(options.frame);
  if (!frame) return frame.error();
  return okStatus();
}

Result<std::string> checkFloodTarget(const std::string& interface, bool i_know) {
  auto driver = interfaceDriver(interface);
  if (!driver) return driver.error();
  if (*driver != "veth" && !i_know) {
    return Error::usage("'" + interface + "' is not a veth (driver " +
                        (driver->empty() ? std::string("none") : *driver) +
                        "): flood is a rehearsal tool; pass --i-know to send out of it anyway");
  }
  return driver;
}

Result<FloodReport> runFlood(FloodOptions options, const std::atomic<bool>* stop) {
  if (Status valid = validateFloodOptions(options); !valid) return valid.error();
  if (Status s = checkPrivileges(); !s) return s.error();
  auto driver = checkFloodTarget(options.interface, options.i_know);
  if (!driver) return driver.error();
  auto ifindex = interfaceIndex(options.interface);
  if (!ifindex) return ifindex.error();
  if (!options.src_mac_given) {
    auto mac = interfaceMac(options.interface);
    if (!mac) return mac.error();
    options.frame.src_mac = *mac;
  }
  auto frame = buildFrame(options.frame);
  if (!frame) return frame.error();
  auto program = FloodProgram::load(*frame);
  if (!program) return program.error();
  // BPF_PROG_RUN runs the generator, and XDP_TX sends, on the calling thread's CPU
  std::optional<PinnedToCpu> pinned;
  if (options.cpu >= 0) {
    auto pin = PinnedToCpu::pin(options.cpu);
    if (!pin) return pin.error();
    pinned.emplace(std::move(*pin));
  }

  FloodReport report;
  report.interface = options.interface;
  report.driver = *driver;
  report.protocol = options.frame.protocol;
  report.family = options.frame.destination.family;
  report.frame_bytes = static_cast<uint32_t>(frame->frame.size());
  report.sources = options.frame.sources;
  report.cpu = options.cpu;
  const bool veth = *driver == "veth";
  VethXdpCounters before;
  if (veth) {
    auto counters = vethXdpCounters(options.interface);
    if (!counters) return counters.error();
    before = *counters;
  }

  Pacer pacer(options.rate_pps, options.duration_ns, options.batch);
  KernelSendDriver sender(*program, *ifindex, options.batch, options.interface,
                          veth ? std::optional<VethXdpCounters>(before) : std::nullopt);
  auto outcome = runSendLoop(pacer, SendLimits{options.count, options.duration_ns}, sender, stop);
  if (!outcome) return outcome.error();
  report.sent = outcome->sent;
  report.calls = outcome->calls;
  report.interrupted = outcome->interrupted;
  report.call_fixed_ns = pacer.cost().fixedNs();
  report.frame_ns = pacer.cost().perFrameNs();
  report.reachable_pps = pacer.reachablePps();
  report.rate_pps = options.rate_pps;
  report.seconds = static_cast<double>(outcome->elapsed_ns) / 1e9;
  if (veth) {
    auto after = vethXdpCounters(options.interface);
    if (!after) return after.error();
    report.peer = VethXdpCounters{after->xmit - before.xmit, after->errors - before.errors};
  }
  return report;
}

std::string floodText(const FloodReport& report) {
  char line[512];
  const double pps = report.packetsPerSecond();
  std::snprintf(line, sizeof(line),
                "sent %llu %s %s frames of %u bytes from %u source%s out of %s in %.3f s: "
                "%.3f Mpps, %.3f Gbit/s",
                static_cast<unsigned long long>(report.sent), protocolName(report.protocol),
                report.family == Family::kV4 ? "IPv4" : "IPv6", report.frame_bytes, report.sources,
                report.sources == 1 ? "" : "s", report.interface.c_str(), report.seconds, pps / 1e6,
                pps * report.frame_bytes * 8 / 1e9);
  std::string out = line;
  if (report.cpu >= 0) out += " on CPU " + std::to_string(report.cpu);
  if (report.peer) {
    std::snprintf(line, sizeof(line), "; the veth peer took %llu, its queue was full for %llu",
                  static_cast<unsigned long long>(report.peer->xmit),
                  static_cast<unsigned long long>(report.peer->errors));
    out += line;
  }
  if (report.rateOutOfReach()) {
    std::snprintf(line, sizeof(line),
                  "; asked %s/s: out of reach here (a call costs %.3f ms plus %.1f ns a frame: "
                  "at most about %s/s from one CPU)",
                  formatCount(report.rate_pps).c_str(), report.call_fixed_ns / 1e6, report.frame_ns,
                  formatCount(threeDigits(report.reachable_pps)).c_str());
    out += line;
  }
  return out + "\n";
}

nlohmann::json floodJson(const FloodReport& report) {
  nlohmann::json out = {
      {"interface", report.interface},
      {"driver", report.driver},
      {"protocol", protocolName(report.protocol)},
      {"family", report.family == Family::kV4 ? "ipv4" : "ipv6"},
      {"frame_bytes", report.frame_bytes},
      {"sources", report.sources},
      {"sent", report.sent},
      {"seconds", report.seconds},
      {"pps", report.packetsPerSecond()},
  };
  if (report.cpu >= 0) out["cpu"] = report.cpu;
  out["calls"] = report.calls;
  out["call_fixed_ns"] = report.call_fixed_ns;
  out["frame_ns"] = report.frame_ns;
  out["reachable_pps"] = report.reachable_pps;
  if (report.rate_pps) {
    out["rate_pps"] = report.rate_pps;
    out["rate_out_of_reach"] = report.rateOutOfReach();
  }
  if (report.interrupted) out["interrupted"] = true;
  if (report.peer) {
    out["peer_accepted"] = report.peer->xmit;
    out["peer_queue_full"] = report.peer->errors;
  }
  return out;
}

}  // namespace floodgate::flood
