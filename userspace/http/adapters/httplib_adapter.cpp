// SPDX-License-Identifier: MIT
// The cpp-httplib adapter: request to RequestInfo, verdict to headers or a 429.
#include "floodgate/adapters/httplib_adapter.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <thread>
#include <utility>

#include "floodgate/core/headers.h"
#include "floodgate/core/ip_address.h"
#include "floodgate/core/policy.h"

namespace floodgate::http {

namespace {

// The major and minor numbers of a "major.minor.patch" version string.
constexpr int versionPart(const char* version, int part) {
  int value = 0;
  for (; *version != '\0'; ++version) {
    if (*version == '.') {
      if (part-- == 0) return value;
      value = 0;
    } else {
      value = value * 10 + (*version - '0');
    }
  }
  return part == 0 ? value : 0;
}
constexpr int kHttplibMinor =
    versionPart(CPPHTTPLIB_VERSION, 0) * 1000 + versionPart(CPPHTTPLIB_VERSION, 1);
// The post-routing handler tells cpp-httplib's own 400s by an empty req.matches, which holds
// up to 0.12; from 0.13 routes with path parameters clear it too (see the CMake check).
static_assert(kHttplibMinor < 13, "floodgate's adapter needs cpp-httplib below 0.13");

// The decision of `verdict` whose delay is the longest: the queue the request waits in.
size_t longestDelay(const Verdict& verdict) {
  size_t longest = 0;
  for (size_t i = 1; i < verdict.decisions.size(); ++i) {
    if (verdict.decisions[i].decision.delay_ns > verdict.decisions[longest].decision.delay_ns) {
      longest = i;
    }
  }
  return longest;
}

// The queue `verdict` waits in, for DelayedThreads: its policy and key.
std::string queueOf(const Verdict& verdict) {
  const PolicyDecision& queue = verdict.decisions[longestDelay(verdict)];
  std::string key(queue.decision.policy);
  key += '\n';
  key += queue.key;
  return key;
}

// The network of `verdict`'s client when the queue it waits in is its address's (a `key: ip`
// policy's): an IPv4 /24, an IPv6 /48, a NAT64 address's IPv4 /24. Empty for a queue of
// another key (an API key, a user: the service hands those out), or a client not told.
std::string networkOf(const Verdict& verdict) {
  const PolicyDecision& queue = verdict.decisions[longestDelay(verdict)];
  if (queue.policy == nullptr || queue.policy->key.kind != KeyKind::kIp) return {};
  std::optional<IpAddress> address = IpAddress::parse(verdict.client_ip);
  if (!address) return {};
  return IpPrefix::of(*address, keyPrefixLength(*address, 24, 48)).toString();
}

// Turns the admitted `verdict`, whose longest delay will not be waited out, into a 429 of
// the policy that asked for that delay, which a retry after `retry_after_ns` can pass.
// `refund` gives back what the verdict took, so the request consumes nothing. The policy
// admitted it (delay_refused): the bound is the server's, so it is not reportable.
void refuseDelay(Verdict& verdict, int64_t retry_after_ns, bool shed,
                 const std::function<void(Verdict&, int64_t)>& refund,
                 const std::function<void(Verdict&)>& jitter) {
  const size_t longest = longestDelay(verdict);
  refund(verdict, 0);
  Decision& refused = verdict.decisions[longest].decision;
  refused.outcome = Outcome::kRejected;
  refused.retry_after_ns = retry_after_ns;
  verdict.binding = refused;
  jitter(verdict);  // spread as every refusal is: clients refused together come back apart
  verdict.violated = {refused.policy};
  verdict.shed = shed;
  verdict.delay_refused = true;
}

// The request this server thread is serving, kept from the pre-routing handler to the
// post-routing one (cpp-httplib runs both on the thread that serves the request): the
// adapter it belongs to, its place in flight (owned by the response: a post-routing
// handler of the service's own, replacing the limiter's, must not keep it), and its
// admitted verdict (for bad_request_cost; empty when no policy applied).
struct AdmittedRequest {
  const void* adapter = nullptr;
  std::weak_ptr<InFlight> ticket;
  Verdict verdict;
};
thread_local AdmittedRequest t_admitted;

// Keeps `ticket` (a place in flight) until `res` is destroyed, after it was written: in the
// response's resource releaser, chained after any releaser set before. A route that
// streams (set_content_provider) replaces the releaser, and the place is given back then,
// when the route returns: early, never late.
void holdUntilWritten(httplib::Response& res, std::shared_ptr<InFlight> ticket) {
  // Run from ~Response, whose status is still there: a 5xx tells an adaptive limit the
  // service is failing, if the post-routing handler has not told it already.
  res.content_provider_resource_releaser_ =
      [before = std::move(res.content_provider_resource_releaser_), ticket = std::move(ticket),
       response = &res](bool success) {
        if (response->status >= 500) ticket->failed();
        if (before) before(success);
      };
}

// Whether the request's headers say a body follows them.
bool carriesBody(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return true;
  for (auto [at, end] = req.headers.equal_range("Content-Length"); at != end; ++at) {
    if (at->second != "0") return true;
  }
  return false;
}

// Whether cpp-httplib reads the body of a request of this method (its expect_content(), and
// a DELETE's only by its Content-Length).
bool bodyIsRead(const httplib::Request& req) {
  const std::string& m = req.method;
  if (m == "DELETE") return req.has_header("Content-Length");
  return m == "POST" || m == "PUT" || m == "PATCH" || m == "PRI";
}

// Whether cpp-httplib read the request's body whole: it hands a route's handler only a body
// it has read (req.matches is filled then, and only then), into req.body, or req.files for a
// form, by one Content-Length. A chunked body is never taken as read: cpp-httplib 0.11 takes
// a chunk not followed by its CRLF as whole, and what follows would be read as a request.
bool bodyWasRead(const httplib::Request& req) {
  if (req.matches.empty() || !bodyIsRead(req) || req.has_header("Transfer-Encoding")) {
    return false;
  }
  if (req.get_header_value_count("Content-Length") != 1) return false;
  if (!req.files.empty()) return true;
  const std::string text = req.get_header_value("Content-Length");
  uint64_t length = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), length);
  return error == std::errc() && end == text.data() + text.size() && length == req.body.size();
}

// Set by the pre-routing handler, read and cleared by the post-routing one: whether the limiter
// saw the request being answered. cpp-httplib answers some before it (a request line it cannot
// parse, a URI or header line too long), having read not even all the headers: a body that
// follows them is unread, whatever they said.
thread_local bool t_decided = false;

// Makes `res` end its connection once written. cpp-httplib reads a request's body only for a
// route's handler: a body left unread (a request refused here, one it answers itself, a body
// sent with GET or HEAD, or a DELETE's without Content-Length, which it never reads) stays on
// the connection, and the server would read it as the next request. Its headers then come
// from the peer, which may be a proxy the limiter trusts to name the client: a body could
// carry a request with any X-Forwarded-For and priority, past every limit and onto another
// client's key. A hook of cpp-httplib 0.11 cannot close a connection; a failed write does: the
// answer goes out through a content provider without a length (a provider with one would be
// asked for the bytes a Range header names, past the text), which writes it whole and then
// reports a failure, which ends the connection's request loop, and `Connection: close` ends
// the body for the client. Run from the post-routing handler, after
// an error handler of the service's and the ranges have had the body: what they made of it is
// what is sent. A HEAD answer is sent with its body: with none, the provider would not run.
void closeAfterWriting(const httplib::Request& req, httplib::Response& res) {
  auto text = std::make_shared<const std::string>(std::move(res.body));
  res.body.clear();
  std::string type = res.get_header_value("Content-Type");
  for (const char* name :
       {"Content-Type", "Content-Length", "Content-Range", "Keep-Alive", "Connection"}) {
    res.headers.erase(name);
  }
  res.set_header("Connection", "close");
  res.set_content_provider(
      type.empty() ? "text/plain" : type,
      [text](size_t, httplib::DataSink& sink) {
        sink.write(text->data(), text->size());
        return false;  // written: the connection ends here, its unread bytes with it
      },
      [before = std::move(res.content_provider_resource_releaser_)](bool success) {
        if (before) before(success);
      });
  // the object is the server's own, not const: only the hook's view of it is
  if (req.method == "HEAD") const_cast<httplib::Request&>(req).method = "GET";
}

// Replaces the rate-limit headers of `res` with those of `verdict`.
void setRateLimitHeaders(httplib::Response& res, const Verdict& verdict) {
  for (const auto& [name, value] : responseHeaders(verdict)) {
    res.headers.erase(name);
    res.set_header(name, value);
  }
}

// `check` decides a request: a Limiter's or a LiveLimiter's check(); `refund` gives back
// what an admitted verdict of it took beyond the units it keeps in each policy; `reenter`
// takes its place in flight again after a shaping wait (Limiter::reenter()); `jitter`
// spreads the retry-after of a verdict refused here (Limiter::jitterRetryAfter()).
std::shared_ptr<const DelayedThreads> install(httplib::Server& server,
                                              std::function<Verdict(const RequestInfo&)> check,
                                              std::function<void(Verdict&, int64_t)> refund,
                                              std::function<bool(Verdict&)> reenter,
                                              std::function<void(Verdict&)> jitter,
                                              HttplibOptions options) {
  // A rate-limited response, 429 or not, must not wait 40 ms on a delayed ACK (see
  // HttplibOptions::tcp_nodelay): the limiter's own cost is microseconds.
  if (options.tcp_nodelay) server.set_tcp_nodelay(true);
  const size_t per_key = options.max_delayed_threads_per_key.value_or(
      std::max<size_t>(1, options.max_delayed_threads / 8));
  auto delayed =
      std::make_shared<DelayedThreads>(options.max_delayed_threads, per_key,
                                       options.max_delayed_threads_per_network.value_or(per_key));
  if (!options.wait_for) {
    options.wait_for = [](std::chrono::nanoseconds delay) { std::this_thread::sleep_for(delay); };
  }
  // One identity per installation, so a verdict is only ever refunded by its own adapter.
  auto adapter = std::make_shared<const char>('\0');
  const int64_t bad_request_cost = options.bad_request_cost;
  // Run once the route has answered, before the response is written.
  server.set_post_routing_handler(
      [refund, bad_request_cost, adapter, malformed_route_400 = options.malformed_route_400](
          const httplib::Request& req, httplib::Response& res) {
        // A route's own stream is left as it is: with the bodies cpp-httplib never reads
        // refused up front, only a content-reader route answers a request with a body without
        // cpp-httplib reading it, and that body is the route's to read.
        const bool decided = std::exchange(t_decided, false);
        if ((!decided || (carriesBody(req) && !bodyWasRead(req))) && !res.content_provider_) {
          closeAfterWriting(req, res);
        }
        if (t_admitted.adapter != adapter.get()) return;
        AdmittedRequest admitted = std::move(t_admitted);
        t_admitted = {};  // no verdict (nor its policy set) is kept between requests
        if (std::shared_ptr<InFlight> ticket = admitted.ticket.lock()) {
          // The latency sample of the adaptive limit ends here: the write that follows goes
          // at the client's pace, and a client reading slowly must not teach the limit that
          // the service is slow. A 4xx was refused, by the route or by cpp-httplib (a 404
          // for no route at all, in microseconds), not served: no sample either.
          if (res.status >= 500) {
            ticket->failed();
          } else if (res.status >= 400) {
            ticket->abandon();
          }
          ticket->finish();
        }
        if (bad_request_cost < 0 || res.status != 400 || !admitted.verdict.limited()) return;
        // cpp-httplib fills req.matches only when it hands the request to a route's handler:
        // empty, the 400 is its own, answered before any route ran. A route's 400 may come
        // after its work, and its status is the client's choice (a wrong password), so it is
        // discounted only where the service says it refuses malformed requests up front.
        const bool by_route = !req.matches.empty();
        if (by_route && !(malformed_route_400 && malformed_route_400(req))) return;
        refund(admitted.verdict, bad_request_cost);
        setRateLimitHeaders(res, admitted.verdict);
      });
  server.set_pre_routing_handler(
      [check = std::move(check), refund, reenter = std::move(reenter), options = std::move(options),
       jitter = std::move(jitter), delayed, adapter,
       bad_request_cost](const httplib::Request& req, httplib::Response& res) {
        t_admitted = {};
        t_decided = true;
        if (!bodyIsRead(req) && carriesBody(req)) {
          // a body cpp-httplib never reads, whatever answers the request: refused before any
          // policy (nothing charged), and the connection ended once answered (post-routing)
          res.status = 400;
          res.set_content(R"({"type":"about:blank","title":"Bad Request","status":400,)"
                          R"("detail":"this server reads no body sent with this method )"
                          R"((GET, HEAD, OPTIONS, or DELETE without Content-Length): send )"
                          R"(the request without one"})",
                          "application/problem+json");
          return httplib::Server::HandlerResponse::Handled;
        }
        std::string user = options.user_of ? options.user_of(req) : std::string();
        std::string priority = options.priority_of ? options.priority_of(req) : std::string();
        RequestInfo info;
        info.method = req.method;
        info.path = req.path;  // percent-decoded by cpp-httplib; the limiter normalises it
        info.peer = req.remote_addr;
        info.user = user;
        info.priority = priority;
        info.headers.reserve(req.headers.size());
        for (const auto& [name, value] : req.headers) info.headers.emplace_back(name, value);

        Verdict verdict = check(info);
        // The place in flight goes with the response: cpp-httplib destroys it once it is
        // written, whatever the route did, and calls its resource releaser then. Not kept
        // in the verdict, whose copies (on_verdict's) could outlive the request.
        std::shared_ptr<InFlight> ticket = std::move(verdict.in_flight);
        if (!verdict.limited() && verdict.allowed()) {
          if (ticket) holdUntilWritten(res, ticket);
          t_admitted = {adapter.get(), ticket, {}};
          return httplib::Server::HandlerResponse::Unhandled;
        }

        // A delay is waited out only within the bounds; beyond one the request is refused,
        // and Retry-After is when it would be within them without any other thread's help.
        const int64_t delay_ns = verdict.binding.delay_ns;
        std::optional<DelayedThreads::Slot> slot;
        if (verdict.allowed() && options.apply_delay && delay_ns > 0) {
          const int64_t max_delay_ns = options.max_delay.count();
          if (delay_ns > max_delay_ns) {
            // a queue drains at its rate: the delay is max_delay once the excess has drained
            refuseDelay(verdict, delay_ns - max_delay_ns, /*shed=*/false, refund, jitter);
          } else {
            DelayedThreads::Taken taken = delayed->tryTake(queueOf(verdict), networkOf(verdict));
            slot = std::move(taken.slot);
            // Once the delay has passed, the queue ahead has drained and it needs no thread.
            // No slot free is other clients' doing (shed); its queue's or network's share
            // taken, its own.
            if (!slot) refuseDelay(verdict, delay_ns, /*shed=*/!taken.queue_full, refund, jitter);
          }
        }
        if (slot) {
          // Waiting is no work: the place in flight is others' meanwhile, and is taken again
          // after, when its class may be full (then shed, and refunded).
          if (ticket) ticket->abandon();
          ticket.reset();
          options.wait_for(std::chrono::nanoseconds(delay_ns));
          slot.reset();
          if (reenter(verdict)) ticket = std::move(verdict.in_flight);
        }
        if (!verdict.allowed() && ticket) {
          // it did no work: no latency sample for the adaptive limit
          ticket->abandon();
          ticket.reset();
        }

        if (options.on_verdict) options.on_verdict(req, verdict);
        for (const auto& [name, value] : responseHeaders(verdict)) res.set_header(name, value);
        if (!verdict.allowed()) {
          res.status = statusFor(verdict);
          // a body, unread, ends the connection once this is written (closeAfterWriting)
          res.set_content(problemJson(verdict), "application/problem+json");
          return httplib::Server::HandlerResponse::Handled;
        }
        if (ticket) holdUntilWritten(res, ticket);
        t_admitted = {adapter.get(), ticket, {}};
        if (bad_request_cost >= 0) t_admitted.verdict = std::move(verdict);
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
      [limiter](Verdict& verdict, int64_t kept) { limiter->refund(verdict, kept); },
      [limiter](Verdict& verdict) { return limiter->reenter(verdict); },
      [limiter](Verdict& verdict) { limiter->jitterRetryAfter(verdict.binding); },
      std::move(options));
}

std::shared_ptr<const DelayedThreads> installRateLimiter(httplib::Server& server,
                                                         std::shared_ptr<LiveLimiter> limiter,
                                                         HttplibOptions options) {
  return install(
      server, [limiter](const RequestInfo& info) { return limiter->check(info); },
      [limiter](Verdict& verdict, int64_t kept) { limiter->refund(verdict, kept); },
      [limiter](Verdict& verdict) { return limiter->reenter(verdict); },
      [limiter](Verdict& verdict) { limiter->jitterRetryAfter(verdict); }, std::move(options));
}

}  // namespace floodgate::http
