// SPDX-License-Identifier: MIT
// Resolving a Redis server's host name within a call's deadline.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "floodgate/common/result.h"

namespace floodgate::http::redis {

// Looks `host` up the slow way (getaddrinfo): its numeric address, or why not.
using HostLookup = std::function<Result<std::string>(const std::string& host)>;

// The system's lookup: getaddrinfo(), the first IPv4 address, else the first IPv6 one (as
// hiredis itself would connect).
Result<std::string> lookUpHost(const std::string& host);

// getaddrinfo() has no timeout of its own: a DNS server that does not answer holds it for
// resolv.conf's timeout times its attempts (10 s and more), far past any call's deadline.
// So each name is looked up on a thread of its own, one at a time, and a caller waits for
// it no longer than its deadline. An address found is kept for kFresh, then given at once
// while a newer one is looked up, and kept through lookups that fail: a name that resolved
// once never makes a call wait again, nor fail for want of DNS. A name never resolved is
// looked up again at most every kRetry after a failure, which is given meanwhile. A
// numeric address is returned as it is. Thread-safe.
class HostResolver {
 public:
  static constexpr std::chrono::seconds kFresh{30};
  static constexpr std::chrono::seconds kRetry{1};

  explicit HostResolver(HostLookup lookup = lookUpHost);

  // The numeric address of `host`, or an error: it does not resolve, or its lookup took
  // longer than `deadline` (the lookup goes on, and its answer serves the next call).
  Result<std::string> resolve(const std::string& host,
                              std::chrono::steady_clock::time_point deadline);

  // Looks `host` up again at the next call (which still gets the address kept): a server
  // that could not be reached there may have moved to another address.
  void refresh(const std::string& host);

  // The process's resolver, which every Redis connection uses.
  static HostResolver& shared();

 private:
  struct State;
  // shared with the lookup threads, which may outlive the resolver
  std::shared_ptr<State> state_;
};

}  // namespace floodgate::http::redis
