// SPDX-License-Identifier: MIT
// EscalateConfig: http.escalate, what both ends of an offender report agree on: when a
// service reports a client, where it reports it, and what the controller makes of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace floodgate::report {

// Handing abusers to the XDP layer: a client IP rejected `rejections` times within
// `within_ms` is reported to the controller (`floodgate run`), which bans it in XDP for
// `ban_ns`. Services report over the Unix datagram socket `socket` or, for a fleet, to the
// Redis stream `redis_stream` (on the servers of http.store), signed with the secret in
// `secret_file`; the controller takes both.
struct EscalateConfig {
  bool enabled = false;
  int64_t rejections = 0;
  int64_t within_ms = 0;
  uint64_t ban_ns = 0;
  std::string socket = "/run/floodgate/reports.sock";
  // Who may report over the socket: root, these users and the members of these groups
  // (checked against each datagram's credentials). The socket file is mode 0660 in
  // `socket_group` (root's group when empty), whose members are reporters too.
  std::string socket_group;
  std::vector<std::string> reporter_users;
  std::vector<std::string> reporter_groups;
  // Bans one reporter (a socket user, a stream's reporting host) may cause per minute; reports
  // beyond it are counted as rate_limited.
  int64_t max_bans_per_minute = 60;
  // Bans the report stream as a whole may cause per minute: a stream reporter names itself,
  // and whoever holds the secret can sign under any number of names.
  int64_t max_stream_bans_per_minute = 600;
  // Bans of the clients of one network (an IPv4 /24, an IPv6 /48) per minute, over every
  // reporter and the stream: whoever holds a /48 (tunnel brokers give them away) has 65,536
  // /64 clients to drive over the threshold, and would spend the quotas above before any
  // other abuser's report bans.
  int64_t max_bans_per_network_per_minute = 10;
  std::string redis_stream;  // empty: services report over the socket
  std::string secret_file;
  std::string secret;  // read from secret_file when the config is parsed
};

}  // namespace floodgate::report
