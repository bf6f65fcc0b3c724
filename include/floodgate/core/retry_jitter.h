// SPDX-License-Identifier: MIT
// Retry-After jitter: clients refused together are told to come back at different seconds.
#pragma once

#include <cstdint>

namespace floodgate::http {

// The retry-after to tell a client refused with `retry_after_ns` to wait at least, in whole
// seconds as Retry-After says it: ceil(retry_after_ns) plus a whole number of seconds
// drawn evenly from 0 to ceil(fraction × that), from `random`. Never earlier than a retry
// can succeed; `fraction` 0 is no jitter. Spread in seconds, because Retry-After is: a
// fraction of a second added to the wait would round up to the same second for nearly
// every client.
int64_t jitteredRetryAfterNs(int64_t retry_after_ns, double fraction, uint64_t random);

// A random number for the above: a per-thread generator seeded from the OS, fast and lock
// free; not for secrets.
uint64_t jitterRandom();

}  // namespace floodgate::http
