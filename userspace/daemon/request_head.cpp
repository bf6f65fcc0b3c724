// SPDX-License-Identifier: MIT
// The request line parsed; of the headers after it, the few the endpoint needs, up to the
// blank line that ends them.
#include "daemon/request_head.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace floodgate::daemon {
namespace {

bool isToken(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < 'A' || c > 'Z') return false;  // methods are upper-case letters
  }
  return true;
}

// METHOD SP /TARGET SP HTTP/1.x, without its line end.
bool readRequestLine(std::string_view line, RequestHead& head) {
  const size_t first = line.find(' ');
  if (first == std::string_view::npos) return false;
  const size_t second = line.find(' ', first + 1);
  if (second == std::string_view::npos) return false;
  const std::string_view method = line.substr(0, first);
  const std::string_view target = line.substr(first + 1, second - first - 1);
  const std::string_view version = line.substr(second + 1);
  if (!isToken(method) || target.empty() || target.front() != '/') return false;
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return false;
  head.keep_alive = version == "HTTP/1.1";
  for (char c : target) {
    if (c <= ' ' || c == 0x7f) return false;
  }
  head.method = std::string(method);
  head.path = std::string(target.substr(0, target.find('?')));
  return true;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// The header lines that matter here (each without its line end): "Connection:" changes
// whether the connection is kept, a body's length or encoding marks a body, and "Host:"
// names the host asked for. False for a second Host header: which one a proxy in front
// read cannot be known.
bool readHeader(std::string_view line, RequestHead& head) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return true;
  const std::string name = lower(trimmed(line.substr(0, colon)));
  const std::string value = lower(trimmed(line.substr(colon + 1)));
  if (name == "host") {
    if (head.host) return false;
    head.host = value;
  } else if (name == "connection") {
    if (value.find("close") != std::string::npos) {
      head.keep_alive = false;
    } else if (value.find("keep-alive") != std::string::npos) {
      head.keep_alive = true;
    }
  } else if (name == "transfer-encoding" || (name == "content-length" && value != "0")) {
    head.has_body = true;
  }
  return true;
}

// ":PORT" (1 to 5 digits, at most 65535), or nothing.
bool isPortOrNothing(std::string_view text) {
  if (text.empty()) return true;
  if (text.front() != ':' || text.size() < 2 || text.size() > 6) return false;
  uint32_t port = 0;
  for (char c : text.substr(1)) {
    if (c < '0' || c > '9') return false;
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  return port <= 65535;
}

}  // namespace

RequestHead readRequestHead(std::string_view bytes) {
  RequestHead head;
  const size_t line_end = bytes.find('\n');
  if (line_end == std::string_view::npos) return head;
  std::string_view line = bytes.substr(0, line_end);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!readRequestLine(line, head)) {
    head.state = RequestHead::State::kBad;
    return head;
  }
  // the headers end at an empty line: "\n" right after a line's "\n" (its "\r" optional)
  for (size_t start = line_end + 1; start < bytes.size();) {
    const size_t end = bytes.find('\n', start);
    if (end == std::string_view::npos) break;
    std::string_view header = bytes.substr(start, end - start);
    if (!header.empty() && header.back() == '\r') header.remove_suffix(1);
    if (header.empty()) {
      head.state = RequestHead::State::kComplete;
      head.length = end + 1;
      return head;
    }
    if (!readHeader(header, head)) {
      head.state = RequestHead::State::kBad;
      return head;
    }
    start = end + 1;
  }
  return head;
}

bool isAddressOrLocalhost(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    const std::string inside(host.substr(1, close - 1));
    in6_addr v6{};
    return inet_pton(AF_INET6, inside.c_str(), &v6) == 1 && isPortOrNothing(host.substr(close + 1));
  }
  const size_t colon = std::min(host.find(':'), host.size());
  if (!isPortOrNothing(host.substr(colon))) return false;
  const std::string name = lower(host.substr(0, colon));
  in_addr v4{};
  return name == "localhost" || inet_pton(AF_INET, name.c_str(), &v4) == 1;
}

}  // namespace floodgate::daemon
