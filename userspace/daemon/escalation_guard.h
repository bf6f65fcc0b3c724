// SPDX-License-Identifier: MIT
// What an offender report must pass before it becomes a ban: a report is a claim by a
// service, and a wrong or forged one must never take down the host, its proxies, or
// anything the operator allow-listed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon/report_listener.h"
#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"
#include "floodgate/core/policy.h"

namespace floodgate::daemon {

// Why a report is not acted on; kNone: ban it.
enum class Refusal {
  kNone,
  kLoopback,        // 127.0.0.0/8, ::1
  kUnspecified,     // 0.0.0.0/8, ::
  kLinkLocal,       // 169.254.0.0/16, fe80::/10
  kMulticast,       // 224.0.0.0/4, 255.255.255.255, ff00::/8: no packet comes from one
  kOwnAddress,      // an address of this host
  kTrustedProxy,    // inside http.trusted_proxies: banning one takes the whole site down
  kService,         // a Redis server of the config (http.store, fleet.bans): banning one cuts
                    // the fleet off its shared limits and its bans
  kAllowListed,     // inside the config's allow list
  kTooWide,         // an IPv4 prefix, an IPv6 prefix wider than http.ipv6_prefix, or a
                    // prefix over NAT64's 64:ff9b::/96 (an IPv4 client per address)
  kBelowThreshold,  // claims fewer rejections, or a longer window, than http.escalate says
};

// What the config says a report must respect.
struct EscalationRules {
  std::vector<Cidr> allow;
  std::vector<Cidr> trusted_proxies;
  std::vector<Cidr> services;  // storeServerAddresses of the config's Redis servers
  int64_t rejections = 0;
  int64_t within_ms = 0;
  int ipv6_prefix = http::kDefaultIpv6Prefix;
};

// The rules of a config (its allow list and http section; null http: nothing escalates).
EscalationRules escalationRules(const std::vector<Cidr>& allow, const http::HttpConfig* http);

// Whether `report` may become a ban. Pure: `own` is this host's addresses.
Refusal refusalFor(const OffenderReport& report, const EscalationRules& rules,
                   const std::vector<Cidr>& own);

// What must never be banned whoever asks (a report, the fleet), kNone when `address` may
// be: a prefix wider than `widest_ipv4` / `widest_ipv6`, the ranges no client comes from,
// this host (`own`), its trusted proxies, the servers it depends on, and the allow list.
// Pure.
struct NeverBanned {
  int widest_ipv4 = 32;
  int widest_ipv6 = 128;
  const std::vector<Cidr>& allow;
  const std::vector<Cidr>& trusted_proxies;
  const std::vector<Cidr>& own;
  const std::vector<Cidr>& services;
};
Refusal addressRefusal(const Cidr& address, const NeverBanned& never);

// The network of a reported client, which shares one quota of bans with the rest of it: an
// IPv4 /24; an IPv6 /48 (one site's, or one tunnel broker account's: 65,536 /64 clients
// to report); for an address of NAT64's 64:ff9b::/96 (an IPv4 client each), the /120 of
// its IPv4 /24. Never wider than `address` itself.
Cidr reportNetwork(const Cidr& address);

// The addresses of a `type: redis` store's servers (address and cluster seeds), as host
// prefixes: an address as it is, a name as it resolves now (none when it does not); none
// for a Unix socket or another store type.
std::vector<Cidr> storeServerAddresses(const http::StoreConfig& store);

// The Redis servers a config relies on (storeServerAddresses of fleet.bans' and, with an
// http: section, of its store): a report or a fleet record naming one (a spoofed flood through
// a rule that bans and shares) must not cut the fleet off them.
std::vector<Cidr> serviceAddresses(const http::StoreConfig& fleet_redis,
                                   const http::HttpConfig* http);

// Every address on this host's interfaces (getifaddrs), as host prefixes.
Result<std::vector<Cidr>> hostAddresses();

// This host's addresses, read again when older than a few seconds (an address added to
// an interface is protected from then on). Not thread-safe.
class HostAddresses {
 public:
  using Clock = std::chrono::steady_clock;
  // The list; when it cannot be read again, a warning and the last one read.
  const std::vector<Cidr>& get(Clock::time_point now);

 private:
  std::vector<Cidr> addresses_;
  Clock::time_point read_{};
};

// The groups of a user, as the user database says, read at most once every kFreshFor per
// user: a report over the socket is checked on the daemon's loop, where a lookup (through
// LDAP or sssd) may take long, so a reporter sending datagram after datagram must not
// make one each. Bounded: when full, the entry read longest ago goes.
class GroupMemberships {
 public:
  using Clock = std::chrono::steady_clock;
  using Lookup = std::function<std::vector<gid_t>(uid_t)>;
  static constexpr size_t kMaxUsers = 256;
  static constexpr Clock::duration kFreshFor = std::chrono::seconds(10);
  // No groups at all (no such user, or the lookup failed, as a directory that timed out):
  // asked again sooner, so a failed lookup keeps a real reporter out a second at most.
  static constexpr Clock::duration kNoGroupsFreshFor = std::chrono::seconds(1);

  // `lookup`: the user database's (getpwuid_r and getgrouplist), or a test's.
  explicit GroupMemberships(Lookup lookup = {});
  const std::vector<gid_t>& of(uid_t uid, Clock::time_point now);

 private:
  struct Entry {
    Clock::time_point read;
    std::vector<gid_t> groups;
  };
  Lookup lookup_;
  std::map<uid_t, Entry> entries_;
};

// Who may report over the socket: resolved from http.escalate's names when a config is
// applied, so an unknown name rejects the config instead of locking reporters out later.
struct ReporterAccess {
  gid_t socket_gid = 0;
  std::vector<uid_t> users;
  std::vector<gid_t> groups;  // the socket's group is one of them
  // the supplementary groups of senders, shared by the copies of this access
  std::shared_ptr<GroupMemberships> memberships = std::make_shared<GroupMemberships>();

  static Result<ReporterAccess> resolve(const http::EscalateConfig& escalate);
  // Root, a listed user, or a member (primary or supplementary) of a listed group.
  bool allows(uid_t uid, gid_t gid) const;
};

// At most `per_minute` bans per reporter in each minute (a fixed window per reporter).
// Bounded: when the map is full, the reporter whose window began first is forgotten.
class BanQuota {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxReporters = 4096;

  // Whether `reporter` may cause one more ban now (and counts it if so).
  bool take(const std::string& reporter, int64_t per_minute, Clock::time_point now);
  // Whether take() would say yes now, counting nothing.
  bool allows(const std::string& reporter, int64_t per_minute, Clock::time_point now) const;

 private:
  struct Window {
    Clock::time_point start;
    int64_t bans = 0;
  };
  std::map<std::string, Window> windows_;
};

}  // namespace floodgate::daemon
