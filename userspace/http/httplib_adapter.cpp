// SPDX-License-Identifier: MIT
// The cpp-httplib adapter: request to RequestInfo, verdict to headers or a 429.
#include "http/httplib_adapter.h"

#include <chrono>
#include <thread>

#include "http/headers.h"

namespace floodgate::http {

namespace {

// Turns the admitted `verdict`, whose longest delay will not be waited out, into a
// rejection by the policy that asked for that delay, which a retry after `retry_after_ns`
// can pass. `refund` gives back what the verdict took, so the request consumes nothing.
void refuseDelay(Verdict& verdict, int64_t retry_after_ns, bool shed,
                 const std::function<void(Verdict&)>& refund) {
  size_t longest = 0;
  for (size_t i = 1; i < verdict.decisions.size(); ++i) {
    if (verdict.decisions[i].decision.delay_ns > verdict.decisions[longest].decision.delay_ns) {
      longest = i;
    }
  }
  refund(verdict);
  Decision& refused = verdict.decisions[longest].decision;
  refused.outcome = Outcome::kRejected;
  refused.retry_after_ns = retry_after_ns;
  verdict.binding = refused;
  verdict.violated = {refused.policy};
  verdict.shed = shed;
}

// `check` decides a request: a Limiter's or a LiveLimiter's check(); `refund` gives back
// what an admitted verdict of it took.
std::shared_ptr<const DelayedThreads> install(httplib::Server& server,
                                              std::function<Verdict(const RequestInfo&)> check,
                                              std::function<void(Verdict&)> refund,
                                              HttplibOptions options) {
  auto delayed = std::make_shared<DelayedThreads>(options.max_delayed_threads);
  if (!options.wait_for) {
    options.wait_for = [](std::chrono::nanoseconds delay) { std::this_thread::sleep_for(delay); };
  }
  server.set_pre_routing_handler([check = std::move(check), refund = std::move(refund),
                                  options = std::move(options),
                                  delayed](const httplib::Request& req, httplib::Response& res) {
    std::string user = options.user_of ? options.user_of(req) : std::string();
    RequestInfo info;
    info.method = req.method;
    info.path = req.path;
    info.peer = req.remote_addr;
    info.user = user;
    info.headers.reserve(req.headers.size());
    for (const auto& [name, value] : req.headers) info.headers.emplace_back(name, value);

    Verdict verdict = check(info);
    if (!verdict.limited()) return httplib::Server::HandlerResponse::Unhandled;

    // A delay is waited out only within both bounds; beyond either the request is refused,
    // and Retry-After is when it would be within them without any other thread's help.
    const int64_t delay_ns = verdict.binding.delay_ns;
    std::optional<DelayedThreads::Slot> slot;
    if (verdict.allowed() && options.apply_delay && delay_ns > 0) {
      const int64_t max_delay_ns = options.max_delay.count();
      if (delay_ns > max_delay_ns) {
        // a queue drains at its rate: the delay is max_delay once the excess has drained
        refuseDelay(verdict, delay_ns - max_delay_ns, /*shed=*/false, refund);
      } else if (slot = delayed->tryTake(); !slot) {
        // once the delay has passed, the queue ahead has drained and it needs no thread
        refuseDelay(verdict, delay_ns, /*shed=*/true, refund);
      }
    }

    if (options.on_verdict) options.on_verdict(req, verdict);
    for (const auto& [name, value] : responseHeaders(verdict)) res.set_header(name, value);
    if (!verdict.allowed()) {
      res.status = statusFor(verdict);
      res.set_content(problemJson(verdict), "application/problem+json");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (slot) options.wait_for(std::chrono::nanoseconds(delay_ns));
    return httplib::Server::HandlerResponse::Unhandled;
  });
  return delayed;
}

}  // namespace

std::shared_ptr<const DelayedThreads> installRateLimiter(httplib::Server& server,
                                                         std::shared_ptr<Limiter> limiter,
                                                         HttplibOptions options) {
  return install(
      server, [limiter](const RequestInfo& info) { return limiter->check(info); },
      [limiter](Verdict& verdict) { limiter->refund(verdict); }, std::move(options));
}

std::shared_ptr<const DelayedThreads> installRateLimiter(httplib::Server& server,
                                                         std::shared_ptr<LiveLimiter> limiter,
                                                         HttplibOptions options) {
  return install(
      server, [limiter](const RequestInfo& info) { return limiter->check(info); },
      [limiter](Verdict& verdict) { limiter->refund(verdict); }, std::move(options));
}

}  // namespace floodgate::http
