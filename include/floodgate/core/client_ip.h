// SPDX-License-Identifier: MIT
// Which client a request comes from: the socket peer, or what trusted proxies say it is.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "floodgate/core/ip_address.h"

namespace floodgate::http {

// The header the proxies in front of the service name the client in (http.client_header).
// Only that header is read: a client can send the others, and nothing appends to them.
enum class ClientHeader { kNone, kXForwardedFor, kForwarded, kXRealIp };

// The header's config spelling ("x-forwarded-for", ...), and back.
std::string_view clientHeaderName(ClientHeader header);
std::optional<ClientHeader> parseClientHeader(std::string_view text);

// The proxies whose header is believed. Immutable; thread-safe.
class TrustedProxies {
 public:
  TrustedProxies() = default;
  explicit TrustedProxies(std::vector<IpPrefix> prefixes) : prefixes_(std::move(prefixes)) {}
  bool trusts(const IpAddress& address) const;
  bool empty() const { return prefixes_.empty(); }

 private:
  std::vector<IpPrefix> prefixes_;
};

// The address of the connection's peer as the server's socket names it: with a port or
// not, and an IPv6 link-local peer with its zone ("fe80::1%eth0"), which is dropped: the
// zone is the server's interface, not part of the client's address. nullopt: no address.
std::optional<IpAddress> peerAddress(std::string_view peer);

// Whether the connection's peer is one of `trusted`: never a peer named with a zone, whose
// address (link-local) is another host's on each link, a trusted proxy's on one of them.
bool trustedPeer(std::string_view peer, const TrustedProxies& trusted);

// The client of a request, or nullopt when it cannot be told.
//  - A peer that is not a trusted proxy is the client: no header is read (anyone can send
//    one).
//  - From a trusted proxy, the values of `header` (every line, in the order received) are
//    walked right to left past trusted hops; the first untrusted hop is the client.
//  - The client cannot be told when the peer is not an address, when the walk meets a hop
//    that is not one ("unknown", an obfuscated name, garbage: nothing left of it can be
//    believed), or when every hop is trusted: a trusted proxy is never the client.
// `values` are the lines of `header` only. X-Real-IP holds one address: several lines, or
// a list, cannot be told apart from a client's own and give nullopt.
std::optional<IpAddress> clientAddress(std::string_view peer, ClientHeader header,
                                       const std::vector<std::string_view>& values,
                                       const TrustedProxies& trusted);

// The `for=` node of each element of Forwarded values (RFC 7239), left to right, with
// quotes, brackets and ports removed; "" for an element without one.
std::vector<std::string> forwardedForNodes(const std::vector<std::string_view>& values);
// The elements of X-Forwarded-For values, left to right, with brackets and ports removed.
std::vector<std::string> xForwardedForNodes(const std::vector<std::string_view>& values);

}  // namespace floodgate::http
