// SPDX-License-Identifier: MIT
// Pacer: how many frames the generator hands the kernel in its next call, to hold a target
// rate, or unpaced to go as fast as the kernel sends, whatever one call costs here. Time is
// passed in, so tests step it by hand.
#pragma once

#include <cstddef>
#include <cstdint>

namespace floodgate::flood {

// What one BPF_PROG_RUN call costs, learnt from the calls made: a fixed part and a part per
// frame. The fixed part differs a thousandfold between machines of one kind (10 µs on one,
// 25 ms on another, whatever the call carries), so chunk sizes must follow it.
class CallCost {
 public:
  void observe(uint64_t frames, uint64_t call_ns);

  bool known() const { return calls_ > 0; }
  // Seen in two calls or more. One call alone may have been preempted for any time (half a
  // second on a busy machine); the smaller of two is too large only if both were.
  bool confirmed() const { return calls_ >= 2; }
  // The smallest call seen: the fixed part, plus a few frames' worth.
  uint64_t fixedNs() const { return fixed_ns_; }
  // Per frame, from calls long enough to tell it from the fixed part; 0 until one was made.
  double perFrameNs() const { return per_frame_ns_; }
  // What calls cost lately: the smallest of the last kRecentCalls. One preempted call does
  // not raise it; a machine whose every call now costs more does.
  uint64_t recentNs() const;
  // Frames per second a call of `frames` sends, on this estimate.
  double ratePps(uint64_t frames) const;

 private:
  static constexpr size_t kRecentCalls = 3;
  uint64_t calls_ = 0;
  uint64_t fixed_ns_ = 0;
  double per_frame_ns_ = 0;
  uint64_t recent_ns_[kRecentCalls] = {};  // by calls_ % kRecentCalls
};

class Pacer {
 public:
  // The most frames one call may carry (the kernel takes a u32; 64M frames are seconds).
  static constexpr uint64_t kMaxChunk = 1ULL << 26;
  // An unpaced call carries at least this, and its first long call exactly this.
  static constexpr uint64_t kMinUnpacedChunk = 16384;

  // rate_pps 0: as fast as the kernel sends. duration_ns 0: no time bound. The first call
  // carries at most first_chunk frames: it measures the fixed cost (and proves a veth peer
  // takes frames) before anything big goes.
  Pacer(uint64_t rate_pps, uint64_t duration_ns, uint64_t first_chunk)
      : rate_pps_(rate_pps),
        duration_ns_(duration_ns),
        first_chunk_(first_chunk ? first_chunk : 1) {}

  // Frames to send now, `elapsed_ns` after the start with `sent` gone; 0 means wait
  // waitNs() first.
  uint64_t next(uint64_t elapsed_ns, uint64_t sent) const;
  // Nanoseconds until next() is not 0.
  uint64_t waitNs(uint64_t elapsed_ns, uint64_t sent) const;
  // What the call just made cost.
  void observe(uint64_t frames, uint64_t call_ns) { cost_.observe(frames, call_ns); }

  const CallCost& cost() const { return cost_; }
  // The most this machine sends on the calls' cost: what an unpaced chunk reaches.
  double reachablePps() const;

 private:
  uint64_t unpacedChunk(uint64_t elapsed_ns) const;
  uint64_t pacedChunk(uint64_t elapsed_ns, uint64_t sent) const;
  // Frames that fit in the time the duration has left (at least a first chunk).
  uint64_t fitsIn(uint64_t elapsed_ns) const;
  // Frames due by `at_ns` after the start.
  uint64_t dueBy(uint64_t at_ns) const;
  // How long before their due time a paced call's frames are handed over: a call's frames
  // go when it returns, so the fixed cost, once confirmed. Leading by one call's cost would
  // send everything due in a stall early.
  uint64_t leadNs() const { return cost_.confirmed() ? cost_.fixedNs() : 0; }

  uint64_t rate_pps_;
  uint64_t duration_ns_;
  uint64_t first_chunk_;
  CallCost cost_;
};

}  // namespace floodgate::flood
