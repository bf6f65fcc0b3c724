// SPDX-License-Identifier: MIT
// One call that puts a Limiter in front of every route of a cpp-httplib server.
#pragma once

#include <httplib.h>

#include <functional>
#include <memory>
#include <string>

#include "http/limiter.h"
#include "http/live_limiter.h"

namespace floodgate::http {

struct HttplibOptions {
  // The user id for `key: user` policies, e.g. from the session the service authenticated.
  // Unset or returning "" means no user (such policies do not apply).
  std::function<std::string(const httplib::Request&)> user_of;
  // Hold an admitted request in its server thread for the decision's delay (leaky-bucket
  // shaping) before the route runs. Off: the delay is only reported.
  bool apply_delay = true;
  // Called for every request a policy applied to, after the decision (e.g. for metrics).
  std::function<void(const httplib::Request&, const Verdict&)> on_verdict;
};

// Installs `limiter` as `server`'s pre-routing handler (replacing any set before). Every
// response under a policy gets RateLimit-Policy and RateLimit; a rejection is answered
// right there with 429 (503 for a fail-closed store that is down), Retry-After when a retry
// can succeed, and an application/problem+json body naming the violated policies.
// Thread-safe as the limiter is; `limiter` is kept alive by the server's handler.
void installRateLimiter(httplib::Server& server, std::shared_ptr<Limiter> limiter,
                        HttplibOptions options = {});
// Same with a limiter whose policies are swapped while the server runs (a published source).
void installRateLimiter(httplib::Server& server, std::shared_ptr<LiveLimiter> limiter,
                        HttplibOptions options = {});

}  // namespace floodgate::http
