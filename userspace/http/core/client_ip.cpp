// SPDX-License-Identifier: MIT
// The trusted-proxy walk over Forwarded / X-Forwarded-For.
#include "floodgate/core/client_ip.h"

#include <algorithm>
#include <optional>

#include "floodgate/core/header_text.h"

namespace floodgate::http {

namespace {

// Splits on `separator` outside double quotes (a quoted string may hold commas), scanning
// from the right. A proxy appends its element on the right of whatever the client sent, so
// its element is split off correctly however the client's text left of it is quoted: an
// unbalanced quote only ever swallows the client's own elements, never the proxy's.
std::vector<std::string_view> splitOutsideQuotesFromRight(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  bool quoted = false;
  size_t end = s.size();
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == '"' && (i == 0 || s[i - 1] != '\\')) quoted = !quoted;
    if (s[i] == separator && !quoted) {
      parts.push_back(s.substr(i + 1, end - i - 1));
      end = i;
    }
  }
  parts.push_back(s.substr(0, end));
  std::reverse(parts.begin(), parts.end());
  return parts;
}

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "[2001:db8::1]:443" -> "2001:db8::1"; "192.0.2.1:80" -> "192.0.2.1"; "2001:db8::1" stays.
// Anything else around an address ("[198.51.100.7]x", "1.2.3.4:", "1.2.3.4:ab") is not a
// node we can read: "" (which no address parses as).
std::string stripPort(std::string_view node) {
  node = trimOws(node);
  if (!node.empty() && node.front() == '[') {
    size_t close = node.find(']');
    if (close == std::string_view::npos) return {};
    std::string_view rest = node.substr(close + 1);
    if (!rest.empty() && !(rest.front() == ':' && allDigits(rest.substr(1)))) return {};
    return std::string(node.substr(1, close - 1));
  }
  size_t colon = node.find(':');
  if (colon != std::string_view::npos && node.find(':', colon + 1) == std::string_view::npos) {
    // one colon: IPv4 with a port
    return allDigits(node.substr(colon + 1)) ? std::string(node.substr(0, colon)) : std::string();
  }
  return std::string(node);
}

}  // namespace

bool TrustedProxies::trusts(const IpAddress& address) const {
  return std::any_of(prefixes_.begin(), prefixes_.end(),
                     [&](const IpPrefix& prefix) { return prefix.contains(address); });
}

std::vector<std::string> forwardedForNodes(const std::vector<std::string_view>& values) {
  std::vector<std::string> nodes;
  for (std::string_view value : values) {
    for (std::string_view element : splitOutsideQuotesFromRight(value, ',')) {
      if (trimOws(element).empty()) continue;
      std::string node;
      for (std::string_view pair : splitOutsideQuotesFromRight(element, ';')) {
        pair = trimOws(pair);
        size_t eq = pair.find('=');
        if (eq == std::string_view::npos || !equalsIgnoreCase(trimOws(pair.substr(0, eq)), "for")) {
          continue;
        }
        std::string_view v = trimOws(pair.substr(eq + 1));
        if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
        node = stripPort(v);
        break;
      }
      nodes.push_back(std::move(node));
    }
  }
  return nodes;
}

std::vector<std::string> xForwardedForNodes(const std::vector<std::string_view>& values) {
  std::vector<std::string> nodes;
  // X-Forwarded-For has no quoted strings: every comma separates two hops
  for (std::string_view value : values) {
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = std::min(value.find(',', start), value.size());
      std::string_view element = value.substr(start, comma - start);
      if (!trimOws(element).empty()) nodes.push_back(stripPort(element));
      start = comma + 1;
    }
  }
  return nodes;
}

std::string_view clientHeaderName(ClientHeader header) {
  switch (header) {
    case ClientHeader::kNone:
      return "none";
    case ClientHeader::kXForwardedFor:
      return "x-forwarded-for";
    case ClientHeader::kForwarded:
      return "forwarded";
    case ClientHeader::kXRealIp:
      return "x-real-ip";
  }
  return "none";
}

std::optional<ClientHeader> parseClientHeader(std::string_view text) {
  for (ClientHeader h : {ClientHeader::kNone, ClientHeader::kXForwardedFor,
                         ClientHeader::kForwarded, ClientHeader::kXRealIp}) {
    if (equalsIgnoreCase(text, clientHeaderName(h))) return h;
  }
  return std::nullopt;
}

std::optional<IpAddress> peerAddress(std::string_view peer) {
  std::string node = stripPort(peer);
  if (size_t zone = node.find('%'); zone != std::string::npos && node.find(':') < zone) {
    node.resize(zone);
  }
  return IpAddress::parse(node);
}

bool trustedPeer(std::string_view peer, const TrustedProxies& trusted) {
  std::optional<IpAddress> address = peerAddress(peer);
  return address && peer.find('%') == std::string_view::npos && trusted.trusts(*address);
}

std::optional<IpAddress> clientAddress(std::string_view peer, ClientHeader header,
                                       const std::vector<std::string_view>& values,
                                       const TrustedProxies& trusted) {
  std::optional<IpAddress> address = peerAddress(peer);
  if (!address) return std::nullopt;
  // as trustedPeer(), the address parsed once
  if (peer.find('%') != std::string_view::npos || !trusted.trusts(*address)) return address;

  std::vector<std::string> hops;
  switch (header) {
    case ClientHeader::kNone:
      return std::nullopt;  // a trusted proxy that names nobody: the client is unknown
    case ClientHeader::kXForwardedFor:
      hops = xForwardedForNodes(values);
      break;
    case ClientHeader::kForwarded:
      hops = forwardedForNodes(values);
      break;
    case ClientHeader::kXRealIp:
      hops = xForwardedForNodes(values);
      if (hops.size() != 1) return std::nullopt;
      break;
  }
  for (auto hop = hops.rbegin(); hop != hops.rend(); ++hop) {
    address = IpAddress::parse(*hop);
    if (!address) return std::nullopt;  // nothing left of a hop we cannot read is believed
    if (!trusted.trusts(*address)) return address;
  }
  return std::nullopt;  // only trusted proxies: none of them is the client
}

}  // namespace floodgate::http
