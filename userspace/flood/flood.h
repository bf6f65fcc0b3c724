// SPDX-License-Identifier: MIT
// runFlood: `floodgate flood`'s work. Sends the template frame out of an interface with the
// in-kernel generator for a count or a duration, at a target rate, and reports what went.
// A rehearsal tool: it refuses any interface but a veth unless told the operator knows.
#pragma once

#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "flood/frame_builder.h"
#include "flood/interface_info.h"
#include "floodgate/common/result.h"

namespace floodgate::flood {

struct FloodOptions {
  std::string interface;
  FrameSpec frame;
  bool src_mac_given = false;  // else the interface's own MAC
  uint64_t count = 0;          // frames to send; 0: no count bound
  uint64_t duration_ns = 0;    // how long to send; 0: no time bound (a count is then needed)
  uint64_t rate_pps = 0;       // 0: as fast as one CPU sends
  uint32_t batch = 64;         // frames per kernel batch (1..256)
  bool i_know = false;         // allow an interface that is not a veth
  int cpu = -1;                // the CPU to send from (the kernel runs XDP there); -1: any
};

struct FloodReport {
  std::string interface;
  std::string driver;
  Protocol protocol = Protocol::kUdp;
  Family family = Family::kV4;
  uint32_t frame_bytes = 0;
  uint32_t sources = 1;
  int cpu = -1;              // the CPU it sent from, when pinned
  uint64_t sent = 0;         // frames the generator ran on and sent with XDP_TX
  double seconds = 0;        // from the first frame to the end of the last batch
  uint64_t calls = 0;        // BPF_PROG_RUN calls made
  bool interrupted = false;  // stopped by a signal before its count or duration
  uint64_t rate_pps = 0;     // the rate asked for; 0: as fast as it goes
  // What one call cost here, as the pacer measured it, and what that lets one CPU send.
  uint64_t call_fixed_ns = 0;
  double frame_ns = 0;
  double reachable_pps = 0;
  // veth only: how many the peer's queues took, and how many found them full
  std::optional<VethXdpCounters> peer;

  double packetsPerSecond() const { return seconds > 0 ? static_cast<double>(sent) / seconds : 0; }
  // A paced run that ran its course below 95% of the rate asked: this machine's calls
  // cannot carry it.
  bool rateOutOfReach() const {
    return rate_pps > 0 && !interrupted &&
           packetsPerSecond() < 0.95 * static_cast<double>(rate_pps);
  }
};

// Checks the flags that need no kernel: bounds, sizes, the template (usage errors).
Status validateFloodOptions(const FloodOptions& options);

// Refuses an interface that is not a veth unless `i_know`; returns its driver.
Result<std::string> checkFloodTarget(const std::string& interface, bool i_know);

// Sends until the count or the duration is reached, or *stop turns true (a signal handler
// may set it). Needs root.
Result<FloodReport> runFlood(FloodOptions options, const std::atomic<bool>* stop = nullptr);

// One line for people; an object for scripts.
std::string floodText(const FloodReport& report);
nlohmann::json floodJson(const FloodReport& report);

}  // namespace floodgate::flood
