// SPDX-License-Identifier: MIT
// Host name lookups on threads of their own, waited for no longer than a call's deadline.
#include "floodgate/redis/host_resolver.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

namespace floodgate::http::redis {

using Clock = std::chrono::steady_clock;

namespace {

bool numeric(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  if (inet_pton(AF_INET, host.c_str(), buffer) == 1) return true;
  // a scoped link-local address (fe80::1%eth0) is one too, which hiredis takes as it is
  const std::string address = host.substr(0, host.find('%'));
  return inet_pton(AF_INET6, address.c_str(), buffer) == 1;
}

std::string addressText(const addrinfo& info) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* address =
      info.ai_family == AF_INET
          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(info.ai_addr)->sin_addr)
          : static_cast<const void*>(
                &reinterpret_cast<const sockaddr_in6*>(info.ai_addr)->sin6_addr);
  inet_ntop(info.ai_family, address, text, sizeof text);
  return text;
}

}  // namespace

Result<std::string> lookUpHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int error = getaddrinfo(host.c_str(), nullptr, &hints, &found); error != 0) {
    return Error::failure("cannot resolve " + host + ": " + gai_strerror(error));
  }
  std::optional<std::string> v4, v6;
  for (const addrinfo* info = found; info != nullptr; info = info->ai_next) {
    if (info->ai_family == AF_INET && !v4) v4 = addressText(*info);
    if (info->ai_family == AF_INET6 && !v6) v6 = addressText(*info);
  }
  freeaddrinfo(found);
  if (v4) return *v4;
  if (v6) return *v6;
  return Error::failure("cannot resolve " + host + ": it has no IPv4 or IPv6 address");
}

struct HostResolver::State {
  struct Name {
    // the last address found, kept through failed lookups: a DNS server that stops
    // answering must not take away an address that worked
    std::optional<std::string> address;
    Clock::time_point found;
    std::optional<Error> failure;   // of the last lookup, when no address was ever found
    Clock::time_point next_lookup;  // no lookup before this, after a failed one
    bool looking = false;
  };
  HostLookup lookup;
  std::mutex mutex;
  std::condition_variable answered;
  std::map<std::string, Name> names;
};

HostResolver::HostResolver(HostLookup lookup) : state_(std::make_shared<State>()) {
  state_->lookup = std::move(lookup);
}

Result<std::string> HostResolver::resolve(const std::string& host, Clock::time_point deadline) {
  if (numeric(host)) return host;
  std::unique_lock lock(state_->mutex);
  State::Name& name = state_->names[host];
  const Clock::time_point now = Clock::now();
  if (name.address && now - name.found < kFresh) return *name.address;
  if (!name.looking && now >= name.next_lookup) {
    name.looking = true;
    try {
      // detached: a lookup that hangs must hold up nobody, the process's exit included
      std::thread([state = state_, host] {
        Result<std::string> answer = state->lookup(host);
        std::lock_guard done(state->mutex);
        State::Name& looked = state->names[host];
        if (answer) {
          looked.address = std::move(*answer);
          looked.found = Clock::now();
          looked.failure.reset();
        } else {
          looked.failure = answer.error();
          looked.next_lookup = Clock::now() + kRetry;
        }
        looked.looking = false;
        state->answered.notify_all();
      }).detach();
    } catch (const std::system_error& e) {
      name.looking = false;
      name.next_lookup = now + kRetry;
      if (name.address) return *name.address;
      return Error::failure("cannot resolve " + host + ": no thread to look it up on (" + e.what() +
                            ")");
    }
  }
  // an address found before is still the likeliest one: no call waits for its refresh
  if (name.address) return *name.address;
  if (!name.looking) return *name.failure;
  if (!state_->answered.wait_until(lock, deadline, [&] { return !name.looking; })) {
    return Error::failure("cannot resolve " + host +
                          ": no answer within the call's timeout (a DNS server that does not "
                          "answer?); the lookup goes on for the next call");
  }
  if (name.address) return *name.address;
  return *name.failure;
}

void HostResolver::refresh(const std::string& host) {
  std::lock_guard lock(state_->mutex);
  auto found = state_->names.find(host);
  // a server that is down, not moved, fails every connect: one lookup per kRetry at most
  if (found != state_->names.end() && Clock::now() - found->second.found >= kRetry) {
    found->second.found = {};
  }
}

HostResolver& HostResolver::shared() {
  // never destroyed: a lookup thread still running at exit finds its state there
  static HostResolver* resolver = new HostResolver();
  return *resolver;
}

}  // namespace floodgate::http::redis
