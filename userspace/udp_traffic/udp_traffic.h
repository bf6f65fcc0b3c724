// SPDX-License-Identifier: MIT
// UDP traffic for demos and end-to-end tests: senders and a counting receiver that run in a
// given network namespace, bounded in time. Test use only: it sends where it is told.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "floodgate/common/result.h"

namespace floodgate {

struct UdpSendOptions {
  std::string netns;        // /run/netns/NAME or empty for the current namespace
  std::string source;       // local address to send from (must exist in that namespace)
  std::string destination;  // IPv4 or IPv6 address
  uint16_t port = 9;
  double seconds = 1.0;       // how long to send; the hard bound of the loop
  uint64_t rate_pps = 0;      // 0: as fast as the sockets go
  unsigned threads = 1;       // each on its own CPU (round robin over the online CPUs)
  size_t payload_bytes = 18;  // 18 bytes of UDP payload make a 60-byte IPv4 frame
  // Gaps between sends longer than this are counted in UdpSendResult::idle_s (a limit's
  // burst lasts burst / rate seconds: a longer gap loses tokens nobody could use).
  double gap_allowance_s = 0;
  // A packet the interface had no room for (a veth whose peer's XDP has not had a CPU to
  // take its queue) is not sent: the call says so (IP_RECVERR), and it is neither counted
  // nor ends a gap. Without, it counts as sent and shows only in the interface's tx drops.
  bool unsent_when_queue_full = false;
  // When set, sending also ends as soon as it turns true (`seconds` still bounds it).
  const std::atomic<bool>* stop = nullptr;
  // Paced only: the most packets a thread sends back to back to catch up after falling
  // behind (a stall on a busy machine); the backlog beyond it is forgiven, so a client
  // meant to stay under a limit never bursts past that limit's burst. 0: catch up fully.
  uint64_t max_burst = 0;
};

struct UdpSendResult {
  uint64_t sent = 0;  // without unsent_when_queue_full, those the queue dropped too
  // CLOCK_MONOTONIC seconds from the end of the first send call to the start of the last
  // one: packets went all along that time, however long a call was preempted for
  double first_send_s = 0;
  double last_send_s = 0;
  // Time the sender may have sent nothing for longer than gap_allowance_s (from the start of
  // one call to the end of the next), in all threads at once at most: no packet can have
  // been charged in it.
  double idle_s = std::numeric_limits<double>::infinity();
  double elapsed() const { return std::max(0.0, last_send_s - first_send_s); }
};

// Moves the calling thread into `netns` (a path under /run/netns); empty stays put.
Status enterNetns(const std::string& netns);

// Sends until options.seconds pass; blocks.
Result<UdpSendResult> sendUdp(const UdpSendOptions& options);

// Counts UDP datagrams per source address on a port, in a namespace, until stopped.
class UdpCounter {
 public:
  UdpCounter() = default;
  ~UdpCounter();
  UdpCounter(const UdpCounter&) = delete;
  UdpCounter& operator=(const UdpCounter&) = delete;

  Status start(const std::string& netns, uint16_t port);
  // Stops receiving; returns datagrams per source address, those delivered before the stop
  // that the receiving thread had not read yet too.
  std::map<std::string, uint64_t> stop();

 private:
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::map<std::string, uint64_t> counts_;
  int fd_ = -1;
};

// Seconds on CLOCK_MONOTONIC.
double monotonicSeconds();

}  // namespace floodgate
