// SPDX-License-Identifier: MIT
// OffenderReporter: counts rejected requests per client (Verdict::client_key: an IPv4
// address or an IPv6 prefix) and reports the clients that keep getting rejected
// (http.escalate) to the controller, which bans them in XDP. Each report is one line
// (floodgate/report/offender_report.h):
//   offender 198.51.100.7 rejections=50 within_ms=10000
//   offender 2001:db8:1:2::/64 rejections=50 within_ms=10000
// sent as a datagram over the controller's Unix socket or, with http.escalate.redis_stream,
// signed and added to a Redis stream every controller of the fleet reads (report_stream.h).
// A client is reported, then not again for a minute (or the ban time, if shorter), so a
// flood of rejections is one report; one still rejected past the threshold after that is
// reported again, since the controller may have refused the report (another reporter's
// clients spent the quota) and a client it banned no longer reaches the service. Each report
// again doubles the quiet time, up to the ban time: a client whose ban does not keep it away
// (a limiter in monitor mode, traffic that reaches the service another way) costs a few
// reports a ban time, not one a minute. A report that could not be
// sent (no controller on the socket, the Redis queue full) is sent again on the client's next
// rejection a second later or after.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <queue>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "floodgate/common/result.h"
#include "floodgate/core/clock.h"
#include "floodgate/core/keyed_hash.h"
#include "floodgate/core/policy.h"
#include "floodgate/fleet/redis_report_queue.h"

namespace floodgate::http {

class OffenderReporter {
 public:
  // At most this many client IPs are counted at once. Past it, a new IP takes the place of
  // an entry whose window and quiet time are over, or else of the entry with the fewest
  // rejections among kEvictionDraws drawn at random that holds no report: so keys each
  // rejected now and then (a /48's /64s, a botnet's addresses, kept under the threshold)
  // cannot fill the table and keep a client crossing it from ever being reported. Only when
  // every drawn entry holds a report is the new IP not counted (`dropped()` counts it).
  static constexpr size_t kMaxTracked = 65536;
  static constexpr int kEvictionDraws = 8;
  // After a report that could not be sent, the client's next rejection this much later
  // sends it again: a controller restarting must not let an abuser go a whole ban time.
  static constexpr int64_t kResendNs = 1'000'000'000;
  // After a client's first report, its rejections are counted again this much later (or the
  // ban time, if shorter), twice that after its next, and so on up to the ban time: a report
  // the controller refused does not leave an abuser a whole ban time, which may be a day.
  static constexpr int64_t kReportAgainNs = 60'000'000'000;

  // Reports as `config.escalate` says, to the Redis of `config.store` for a stream.
  static Result<std::unique_ptr<OffenderReporter>> create(const HttpConfig& config,
                                                          std::shared_ptr<const Clock> clock);
  ~OffenderReporter();

  // Notes one rejected request of `client_key`; sends a report when it crosses the limit.
  // An empty key (a client that cannot be told) is never reported. Thread-safe; never
  // blocks on the controller (a full or missing socket is counted).
  void noteRejection(std::string_view client_key);

  // Sends what waits for Redis and stops: the counts are final (a reporter being retired).
  void close();

  uint64_t reportsSent() const;
  uint64_t reportErrors() const;  // the controller (or Redis) was not there
  uint64_t dropped() const;       // too many clients at once, or the Redis queue was full

 private:
  struct Client {
    int64_t window_start_ns = 0;
    int64_t rejections = 0;
    int64_t quiet_until_ns = 0;  // reported: not counted again before then
    int reports = 0;             // sent since its entry began: each doubles the quiet time
    bool unsent = false;         // its report could not be sent: send it again when quiet ends
    int64_t queued_at_ns = 0;    // its entry of `expiries_`; others with its key are stale
  };
  // When a client's entry may go: its window over and its quiet time too.
  int64_t expiry(const Client& client) const;
  // An entry of `expiries_`: a client's key and the time it was queued under, which is its
  // expiry as of then (a later rejection may have moved the expiry on).
  void queue(Client& client, const std::string& key);
  // The quiet time after a report of `client` (counted), up to the ban time.
  int64_t quietAfterReport(Client& client) const;
  struct Queued {
    int64_t at_ns;
    std::string key;
    bool operator>(const Queued& other) const { return at_ns > other.at_ns; }
  };

  OffenderReporter(const EscalateConfig& config, std::shared_ptr<const Clock> clock, int fd,
                   std::unique_ptr<RedisReportQueue> stream);
  bool send(const std::string& client_key);  // false: not sent (counted)
  void resendLater(const std::string& client_key);
  void evictOld(int64_t now_ns);
  // Makes room in a full table by the draw above; false when no drawn entry may go.
  bool evictFewest();

  EscalateConfig config_;
  std::shared_ptr<const Clock> clock_;
  int fd_ = -1;                               // the Unix socket, without a stream
  std::unique_ptr<RedisReportQueue> stream_;  // http.escalate.redis_stream
  std::mutex mutex_;
  // keyed hash: clients choose their addresses, and must not pile them on one chain
  std::unordered_map<std::string, Client, KeyedHasher> clients_;
  // Every client once, soonest first: evictOld() looks only at those whose time has come,
  // so a table kept full costs each new client a look at the front, not a pass over all.
  std::priority_queue<Queued, std::vector<Queued>, std::greater<>> expiries_;
  std::minstd_rand draw_{std::random_device{}()};  // evictFewest()'s, under mutex_
  std::atomic<uint64_t> sent_{0}, errors_{0}, dropped_{0};
};

}  // namespace floodgate::http
