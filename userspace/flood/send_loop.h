// SPDX-License-Identifier: MIT
// The generator's send loop: asks the pacer how much to send, hands it to a sender, and
// tells the pacer what the call cost. The sender and the clock are a driver, so tests run
// the loop against a fake kernel on a virtual clock.
#pragma once

#include <atomic>
#include <cstdint>

#include "flood/pacer.h"
#include "floodgate/common/result.h"

namespace floodgate::flood {

// What the loop sends through and reads time from.
class SendDriver {
 public:
  virtual ~SendDriver() = default;
  virtual uint64_t nowNs() = 0;  // a steady clock
  virtual void sleepNs(uint64_t ns) = 0;
  // Sends `frames`; how many went: all of them, or fewer when a signal cut the call short.
  virtual Result<uint64_t> send(uint64_t frames) = 0;
};

struct SendLimits {
  uint64_t count = 0;        // 0: no count bound
  uint64_t duration_ns = 0;  // 0: no time bound
};

struct SendOutcome {
  uint64_t sent = 0;        // every frame that went, those of a call a signal cut short too
  uint64_t elapsed_ns = 0;  // from before the first call to the end of the last
  uint64_t calls = 0;
  bool interrupted = false;  // stopped by *stop or a signal before the bounds were reached
};

// Sends until the count or the duration is reached, or *stop turns true.
Result<SendOutcome> runSendLoop(Pacer& pacer, const SendLimits& limits, SendDriver& driver,
                                const std::atomic<bool>* stop);

}  // namespace floodgate::flood
