// SPDX-License-Identifier: MIT
// The generator's send loop (see send_loop.h).
#include "flood/send_loop.h"

#include <algorithm>

namespace floodgate::flood {
namespace {

// The longest single sleep, so a stop request is seen within a millisecond or so.
constexpr uint64_t kMaxSleepNs = 1'000'000;

}  // namespace

Result<SendOutcome> runSendLoop(Pacer& pacer, const SendLimits& limits, SendDriver& driver,
                                const std::atomic<bool>* stop) {
  SendOutcome out;
  const uint64_t start = driver.nowNs();
  while ((limits.count == 0 || out.sent < limits.count) &&
         (limits.duration_ns == 0 || out.elapsed_ns < limits.duration_ns)) {
    if (stop && stop->load()) {
      out.interrupted = true;
      break;
    }
    uint64_t chunk = pacer.next(out.elapsed_ns, out.sent);
    if (chunk == 0) {
      // a sleep may take far longer than asked (110 µs for 10 µs on some machines): the
      // pacer only ever looks at the clock, so an oversleep is caught up, never lost
      driver.sleepNs(std::min(pacer.waitNs(out.elapsed_ns, out.sent), kMaxSleepNs));
      out.elapsed_ns = driver.nowNs() - start;
      continue;
    }
    if (limits.count) chunk = std::min(chunk, limits.count - out.sent);
    const uint64_t before = driver.nowNs();
    auto went = driver.send(chunk);
    const uint64_t after = driver.nowNs();
    if (!went) return went.error();
    out.elapsed_ns = after - start;
    out.sent += *went;
    ++out.calls;
    if (*went < chunk) {  // a signal: what went counts, the cost of a cut call does not
      out.interrupted = true;
      break;
    }
    pacer.observe(chunk, after - before);
  }
  return out;
}

}  // namespace floodgate::flood
