// SPDX-License-Identifier: MIT
// Which address a request comes from: the socket peer, or what trusted proxies say it is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "http/ip_address.h"

namespace floodgate::http {

// The proxies whose Forwarded / X-Forwarded-For headers are believed. Immutable; thread-safe.
class TrustedProxies {
 public:
  TrustedProxies() = default;
  explicit TrustedProxies(std::vector<Cidr> prefixes) : prefixes_(std::move(prefixes)) {}
  bool trusts(const IpAddress& address) const;
  bool empty() const { return prefixes_.empty(); }

 private:
  std::vector<Cidr> prefixes_;
};

// The client address of a request, as canonical text.
// `forwarded` and `x_forwarded_for` are every value of those headers, in the order received.
// If the peer is not a trusted proxy, the headers are ignored (anyone can send them) and the
// peer is the client. Otherwise the hop list (Forwarded if present, else X-Forwarded-For) is
// walked right to left past trusted hops; the first untrusted hop is the client. A hop that
// is not an address ("unknown", an obfuscated name, garbage) stops the walk: the last
// trusted hop is then the key, since nothing left of it can be believed. If every hop is
// trusted, the leftmost is the client. An unparseable peer is returned as given.
std::string clientIp(std::string_view peer, const std::vector<std::string_view>& forwarded,
                     const std::vector<std::string_view>& x_forwarded_for,
                     const TrustedProxies& trusted);

// The `for=` node of each element of Forwarded values (RFC 7239), left to right, with
// quotes, brackets and ports removed; "" for an element without one.
std::vector<std::string> forwardedForNodes(const std::vector<std::string_view>& values);
// The elements of X-Forwarded-For values, left to right, with brackets and ports removed.
std::vector<std::string> xForwardedForNodes(const std::vector<std::string_view>& values);

}  // namespace floodgate::http
