// SPDX-License-Identifier: MIT
// The checks between an offender report and a ban, and who may send one.
#include "daemon/escalation_guard.h"

#include <grp.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "daemon/log.h"
#include "floodgate/core/redis_address.h"

namespace floodgate::daemon {
namespace {

Cidr prefixOf(const char* text) {
  auto cidr = parseCidr(text);
  return *cidr;  // the texts below are constants that parse
}

// Either holds the other: a ban of `a` would drop some of `b`, or the reverse.
bool overlaps(const Cidr& a, const Cidr& b) {
  return a.family == b.family && (covers(a, b) || covers(b, a));
}

// NAT64's well-known prefix: each of its addresses is one IPv4 client behind the translator.
const Cidr& nat64Prefix() {
  static const Cidr kNat64 = prefixOf("64:ff9b::/96");
  return kNat64;
}

bool overlapsAny(const Cidr& report, const std::vector<Cidr>& list) {
  return std::any_of(list.begin(), list.end(),
                     [&](const Cidr& entry) { return overlaps(entry, report); });
}

Cidr fromHttp(const http::IpPrefix& in) {
  Cidr out;
  out.family = in.base.v4 ? Family::kV4 : Family::kV6;
  out.prefix = static_cast<uint8_t>(in.prefix_len);
  std::copy(in.base.bytes.begin(), in.base.bytes.end(), out.addr.begin());
  maskAddress(out.addr, out.prefix);
  return out;
}

// The groups `uid` is in, primary and supplementary; empty when it has no passwd entry.
std::vector<gid_t> groupsOf(uid_t uid) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) {
    return {};
  }
  int count = 64;
  std::vector<gid_t> groups(static_cast<size_t>(count));
  if (getgrouplist(entry.pw_name, entry.pw_gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<size_t>(count));
    if (getgrouplist(entry.pw_name, entry.pw_gid, groups.data(), &count) < 0) return {};
  }
  groups.resize(static_cast<size_t>(count));
  return groups;
}

// The host prefix of an IPv4 or IPv6 socket address; none for another family.
std::optional<Cidr> hostPrefixOf(const sockaddr* address) {
  Cidr cidr;
  if (address->sa_family == AF_INET) {
    cidr.family = Family::kV4;
    cidr.prefix = 32;
    std::memcpy(cidr.addr.data(), &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, 4);
  } else if (address->sa_family == AF_INET6) {
    cidr.family = Family::kV6;
    cidr.prefix = 128;
    std::memcpy(cidr.addr.data(), &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, 16);
  } else {
    return std::nullopt;
  }
  return cidr;
}

}  // namespace

EscalationRules escalationRules(const std::vector<Cidr>& allow, const http::HttpConfig* http) {
  EscalationRules rules;
  rules.allow = allow;
  if (http == nullptr) return rules;
  for (const http::IpPrefix& proxy : http->trusted_proxies) {
    rules.trusted_proxies.push_back(fromHttp(proxy));
  }
  rules.rejections = http->escalate.rejections;
  rules.within_ms = http->escalate.within_ms;
  rules.ipv6_prefix = http->ipv6_prefix;
  return rules;
}

Refusal addressRefusal(const Cidr& address, const NeverBanned& never) {
  static const struct {
    Cidr prefix;
    Refusal why;
  } kNeverBanned[] = {
      {prefixOf("127.0.0.0/8"), Refusal::kLoopback},
      {prefixOf("::1"), Refusal::kLoopback},
      {prefixOf("0.0.0.0/8"), Refusal::kUnspecified},
      {prefixOf("::"), Refusal::kUnspecified},
      {prefixOf("169.254.0.0/16"), Refusal::kLinkLocal},
      {prefixOf("fe80::/10"), Refusal::kLinkLocal},
      {prefixOf("224.0.0.0/4"), Refusal::kMulticast},
      {prefixOf("255.255.255.255"), Refusal::kMulticast},
      {prefixOf("ff00::/8"), Refusal::kMulticast},
  };
  // An address of the NAT64 prefix is one IPv4 client each, keyed (and reported) whole: a
  // shorter prefix over it, however long for IPv6, is every client behind the translator.
  const int widest = address.family == Family::kV4      ? never.widest_ipv4
                     : overlaps(nat64Prefix(), address) ? 128
                                                        : never.widest_ipv6;
  if (address.prefix < widest) return Refusal::kTooWide;
  for (const auto& range : kNeverBanned) {
    if (overlaps(range.prefix, address)) return range.why;
  }
  if (overlapsAny(address, never.own)) return Refusal::kOwnAddress;
  if (overlapsAny(address, never.trusted_proxies)) return Refusal::kTrustedProxy;
  if (overlapsAny(address, never.services)) return Refusal::kService;
  if (overlapsAny(address, never.allow)) return Refusal::kAllowListed;
  return Refusal::kNone;
}

Cidr reportNetwork(const Cidr& address) {
  const int network = address.family == Family::kV4      ? 24
                      : overlaps(nat64Prefix(), address) ? 120
                                                         : 48;
  Cidr out = address;
  out.prefix = static_cast<uint8_t>(std::min<int>(network, address.prefix));
  maskAddress(out.addr, out.prefix);
  return out;
}

Refusal refusalFor(const OffenderReport& report, const EscalationRules& rules,
                   const std::vector<Cidr>& own) {
  const Refusal refusal = addressRefusal(
      report.address,
      {32, rules.ipv6_prefix, rules.allow, rules.trusted_proxies, own, rules.services});
  if (refusal != Refusal::kNone) return refusal;
  if (report.rejections < rules.rejections || report.within_ms > rules.within_ms) {
    return Refusal::kBelowThreshold;
  }
  return Refusal::kNone;
}

std::vector<Cidr> storeServerAddresses(const http::StoreConfig& store) {
  std::vector<Cidr> out;
  if (store.type != "redis") return out;
  std::vector<std::string> servers = store.cluster;
  if (!store.address.empty()) servers.push_back(store.address);
  for (const std::string& text : servers) {
    auto server = http::redis::Address::parse(text);
    if (!server || !server->unix_path.empty()) continue;
    // a server written ::ffff:a.b.c.d is the IPv4 one, as a report naming it is read
    if (auto cidr = parseCidr(server->host); cidr) {
      out.push_back(mappedIpv4(*cidr).value_or(*cidr));
      continue;
    }
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int error = getaddrinfo(server->host.c_str(), nullptr, &hints, &found); error != 0) {
      logWarning("cannot resolve the Redis server '" + server->host + "' (" + gai_strerror(error) +
                 "): reports and fleet records naming its address are not refused as 'service' "
                 "until a reload resolves it");
      continue;
    }
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      if (auto cidr = hostPrefixOf(a->ai_addr)) out.push_back(mappedIpv4(*cidr).value_or(*cidr));
    }
    freeaddrinfo(found);
  }
  return out;
}

std::vector<Cidr> serviceAddresses(const http::StoreConfig& fleet_redis,
                                   const http::HttpConfig* http) {
  std::vector<Cidr> out = storeServerAddresses(fleet_redis);
  if (http) {
    for (const Cidr& cidr : storeServerAddresses(http->store)) out.push_back(cidr);
  }
  return out;
}

Result<std::vector<Cidr>> hostAddresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return Error::failure(std::string("cannot list this host's addresses: ") +
                          std::strerror(errno));
  }
  std::vector<Cidr> out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    if (auto cidr = hostPrefixOf(a->ifa_addr)) out.push_back(*cidr);
  }
  freeifaddrs(list);
  return out;
}

const std::vector<Cidr>& HostAddresses::get(Clock::time_point now) {
  if (read_ == Clock::time_point{} || now - read_ >= std::chrono::seconds(5)) {
    if (auto addresses = hostAddresses(); addresses) {
      addresses_ = std::move(*addresses);
      read_ = now;
    } else {
      logWarning(addresses.error().message + ": the last list read stays in use");
    }
  }
  return addresses_;
}

Result<ReporterAccess> ReporterAccess::resolve(const http::EscalateConfig& escalate) {
  ReporterAccess access;
  std::vector<char> buffer(16384);
  auto groupId = [&](const std::string& name, const char* key) -> Result<gid_t> {
    group entry{};
    group* found = nullptr;
    if (getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
        found == nullptr) {
      return Error::usage(std::string("http.escalate.") + key + ": there is no group '" + name +
                          "' on this host: create it (groupadd " + name + ") or fix the name");
    }
    return entry.gr_gid;
  };
  if (!escalate.socket_group.empty()) {
    auto gid = groupId(escalate.socket_group, "socket_group");
    if (!gid) return gid.error();
    access.socket_gid = *gid;
    access.groups.push_back(*gid);
  }
  for (const std::string& name : escalate.reporter_groups) {
    auto gid = groupId(name, "reporter_groups");
    if (!gid) return gid.error();
    access.groups.push_back(*gid);
  }
  for (const std::string& name : escalate.reporter_users) {
    passwd entry{};
    passwd* found = nullptr;
    if (getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
        found == nullptr) {
      return Error::usage("http.escalate.reporter_users: there is no user '" + name +
                          "' on this host: fix the name, or drop it from the list");
    }
    access.users.push_back(entry.pw_uid);
  }
  return access;
}

GroupMemberships::GroupMemberships(Lookup lookup)
    : lookup_(lookup ? std::move(lookup) : Lookup(groupsOf)) {}

const std::vector<gid_t>& GroupMemberships::of(uid_t uid, Clock::time_point now) {
  auto it = entries_.find(uid);
  if (it != entries_.end() &&
      now - it->second.read < (it->second.groups.empty() ? kNoGroupsFreshFor : kFreshFor)) {
    return it->second.groups;
  }
  if (it == entries_.end() && entries_.size() >= kMaxUsers) {
    entries_.erase(std::min_element(
        entries_.begin(), entries_.end(),
        [](const auto& a, const auto& b) { return a.second.read < b.second.read; }));
  }
  Entry& entry = entries_[uid];
  entry = {now, lookup_(uid)};
  return entry.groups;
}

bool ReporterAccess::allows(uid_t uid, gid_t gid) const {
  if (uid == 0) return true;
  if (std::find(users.begin(), users.end(), uid) != users.end()) return true;
  if (groups.empty()) return false;
  if (std::find(groups.begin(), groups.end(), gid) != groups.end()) return true;
  for (gid_t member_of : memberships->of(uid, GroupMemberships::Clock::now())) {
    if (std::find(groups.begin(), groups.end(), member_of) != groups.end()) return true;
  }
  return false;
}

bool BanQuota::take(const std::string& reporter, int64_t per_minute, Clock::time_point now) {
  auto it = windows_.find(reporter);
  if (it == windows_.end()) {
    if (windows_.size() >= kMaxReporters) {
      // Full: the reporter whose minute began first goes. Refusing newcomers instead would
      // let whoever filled the map turn escalation off for everyone else.
      auto oldest = std::min_element(
          windows_.begin(), windows_.end(),
          [](const auto& a, const auto& b) { return a.second.start < b.second.start; });
      windows_.erase(oldest);
    }
    it = windows_.emplace(reporter, Window{now, 0}).first;
  }
  Window& window = it->second;
  if (now - window.start >= std::chrono::minutes(1)) window = Window{now, 0};
  if (window.bans >= per_minute) return false;
  ++window.bans;
  return true;
}

bool BanQuota::allows(const std::string& reporter, int64_t per_minute,
                      Clock::time_point now) const {
  auto it = windows_.find(reporter);
  if (it == windows_.end() || now - it->second.start >= std::chrono::minutes(1)) {
    return per_minute > 0;  // a new window
  }
  return it->second.bans < per_minute;
}

}  // namespace floodgate::daemon
