// SPDX-License-Identifier: MIT
// The cpp-httplib adapter: request to RequestInfo, verdict to headers or a 429.
#include "http/httplib_adapter.h"

#include <chrono>
#include <thread>

#include "http/headers.h"

namespace floodgate::http {

namespace {

// `check` decides a request: a Limiter's or a LiveLimiter's check().
void install(httplib::Server& server, std::function<Verdict(const RequestInfo&)> check,
             HttplibOptions options) {
  server.set_pre_routing_handler([check = std::move(check), options = std::move(options)](
                                     const httplib::Request& req, httplib::Response& res) {
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
    if (options.on_verdict) options.on_verdict(req, verdict);
    for (const auto& [name, value] : responseHeaders(verdict)) res.set_header(name, value);

    if (!verdict.allowed()) {
      res.status = statusFor(verdict);
      res.set_content(problemJson(verdict), "application/problem+json");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (options.apply_delay && verdict.binding.delay_ns > 0) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(verdict.binding.delay_ns));
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
}

}  // namespace

void installRateLimiter(httplib::Server& server, std::shared_ptr<Limiter> limiter,
                        HttplibOptions options) {
  install(
      server, [limiter](const RequestInfo& info) { return limiter->check(info); },
      std::move(options));
}

void installRateLimiter(httplib::Server& server, std::shared_ptr<LiveLimiter> limiter,
                        HttplibOptions options) {
  install(
      server, [limiter](const RequestInfo& info) { return limiter->check(info); },
      std::move(options));
}

}  // namespace floodgate::http
