// SPDX-License-Identifier: MIT
// Pacer: how many frames the generator may send now to hold a target rate, from the time
// since the start (passed in, so tests step it by hand) and what has been sent so far.
#pragma once

#include <algorithm>
#include <cstdint>

namespace floodgate::flood {

class Pacer {
 public:
  // rate_pps 0: as fast as possible, max_chunk frames per call. A paced chunk is at most
  // about 2 ms of the rate, so the rate holds over short spans too.
  Pacer(uint64_t rate_pps, uint64_t max_chunk)
      : rate_pps_(rate_pps),
        max_chunk_(rate_pps ? std::clamp<uint64_t>(rate_pps / 500, 1, max_chunk) : max_chunk) {}

  // Frames due at `elapsed_ns` after the start when `sent` have gone; 0 means wait.
  uint64_t due(uint64_t elapsed_ns, uint64_t sent) const {
    if (rate_pps_ == 0) return max_chunk_;
    uint64_t allowed = allowedBy(elapsed_ns);
    return allowed > sent ? std::min(allowed - sent, max_chunk_) : 0;
  }

  // Nanoseconds from `elapsed_ns` until frame number `sent` + 1 is due (0 if it is).
  uint64_t waitNs(uint64_t elapsed_ns, uint64_t sent) const {
    if (rate_pps_ == 0) return 0;
    // frame k is due at k / rate seconds
    unsigned __int128 due_ns =
        (static_cast<unsigned __int128>(sent + 1) * 1'000'000'000ULL + rate_pps_ - 1) / rate_pps_;
    return due_ns > elapsed_ns ? static_cast<uint64_t>(due_ns - elapsed_ns) : 0;
  }

  uint64_t maxChunk() const { return max_chunk_; }

 private:
  uint64_t allowedBy(uint64_t elapsed_ns) const {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(elapsed_ns) * rate_pps_ /
                                 1'000'000'000ULL);
  }
  uint64_t rate_pps_;
  uint64_t max_chunk_;
};

}  // namespace floodgate::flood
