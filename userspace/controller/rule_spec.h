// SPDX-License-Identifier: MIT
// RuleSpec: one rate-limit rule as an operator states it, before it is compiled for the
// XDP program (rule_compiler.h turns it into a struct fg_rule).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "floodgate/common/cidr.h"
#include "floodgate_shared.h"

namespace floodgate {

enum class Protocol : uint8_t { kAny = 0, kIcmp = 1, kTcp = 6, kUdp = 17 };
enum class KeyKind : uint8_t { kSource = 0, kGlobal = 1 };
enum class ExceedAction : uint8_t { kDrop = 0, kMonitor = 1, kBan = 2 };

// The longest ban anyone may start (a rule, `floodgate ban add --for`, an HTTP escalation).
// A ban is for an incident; a source to keep out for longer belongs on the deny list, which
// a config file can own and which survives everything a ban does.
constexpr uint64_t kMaxBanNs = 30ULL * 86400 * 1'000'000'000;
enum class Algorithm : uint8_t { kTokenBucket = 0, kFixedWindow = 1, kSlidingWindow = 2 };

struct PortRange {
  uint16_t first = 0;
  uint16_t last = 0;
};

// The limits of one bucket. 0 means "not limited" for a rate. For the window algorithms a
// window admits rate × window (packets or bytes) and the bursts are not used.
struct LimitSpec {
  uint64_t pps = 0;          // packets per second
  uint64_t burst = 0;        // packets the bucket holds when full
  uint64_t bits_per_s = 0;   // frame bits per second (frame length × 8)
  uint64_t burst_bytes = 0;  // bytes the bucket holds when full

  // field by field (whether a reload changed a rule's limits or floor)
  bool operator==(const LimitSpec&) const = default;
};

// Neighbour Discovery and MLD from this link that pass by no rule: one budget for the
// interface, a rate and a burst (pps 0: without bound). Past it they meet the rules as any
// ICMPv6 does. A host's own neighbour resolution, router advertisements and multicast
// reports are a few a second per neighbour; the default leaves room for a peering LAN.
struct LinkControlBudget {
  uint64_t pps = 1000;
  uint64_t burst = 1000;

  bool operator==(const LinkControlBudget&) const = default;
};
// The highest link-control rate, where the budget is no longer one a link needs.
inline constexpr uint64_t kMaxLinkControlPps = 10'000'000;

inline constexpr uint64_t kDefaultNewSourcesPerS = 10000;
// Sources a second that may take a slot by answering a SYN cookie: apart from the
// new-source cap, which a spoofed flood keeps refusing, so real clients still get in.
inline constexpr uint64_t kDefaultVerifiedSourcesPerS = 10000;
// Remembered sources a second (ones that held a slot within their limits lately) that may
// take a slot ahead of the new-source cap, and how long a source stays remembered.
inline constexpr uint64_t kDefaultReturningSourcesPerS = 10000;
inline constexpr uint64_t kDefaultRememberNs = 3'600'000'000'000ULL;                    // 1h
inline constexpr uint64_t kMaxRememberNs = FG_MAX_REMEMBER_SECONDS * 1'000'000'000ULL;  // 1d

// Whether a rule answers the SYNs of sources without a slot with SYN cookies.
enum class SynCookies : uint8_t {
  kOff = FG_SYN_COOKIES_OFF,
  kAlways = FG_SYN_COOKIES_ALWAYS,
  kAuto = FG_SYN_COOKIES_AUTO,  // while its new-source cap or untracked bucket refuses
};
const char* synCookiesName(SynCookies mode);

struct RuleSpec {
  uint32_t id = 0;     // stable id (0 .. FG_MAX_RULE_IDS-1)
  uint32_t epoch = 0;  // distinguishes this rule from an earlier one with the same id
  std::string name = "default";
  Protocol protocol = Protocol::kAny;
  std::vector<PortRange> dst_ports;  // empty: any
  std::vector<Cidr> sources;         // match.src: empty means any source
  uint8_t tcp_flags_set = 0;
  uint8_t tcp_flags_clear = 0;
  KeyKind key = KeyKind::kSource;
  uint8_t ipv4_prefix = 32;
  uint8_t ipv6_prefix = 64;
  LimitSpec limit;
  // key: source only. The shared bucket of the sources that get no slot of their own (the
  // table is full of limited sources, or the new-source cap is reached): all zero means
  // "the same limits as one source".
  LimitSpec untracked;
  // key: source only. New sources a second that may take a slot; beyond it they are
  // untracked, so a flood of spoofed sources cannot churn the table. 0: no cap.
  uint64_t new_sources_per_s = kDefaultNewSourcesPerS;
  // key: source, a rule that matches TCP SYNs only.
  SynCookies syn_cookies = SynCookies::kOff;
  // With syn_cookies: verified sources a second that may take a slot. 0: no cap.
  uint64_t verified_sources_per_s = kDefaultVerifiedSourcesPerS;
  // key: source only. Remembered sources a second that may take a slot ahead of the
  // new-source cap (0: no cap), and how long a source is remembered (0: none is).
  uint64_t returning_sources_per_s = kDefaultReturningSourcesPerS;
  uint64_t remember_ns = kDefaultRememberNs;
  // Remember only a source whose packet belongs to a TCP connection this host established
  // (remember: connected), not every source seen good twice (remember: seen).
  bool remember_connected = false;
  Algorithm algorithm = Algorithm::kTokenBucket;
  uint64_t window_ns = 1000000000;  // fixed_window and sliding_window only
  ExceedAction action = ExceedAction::kDrop;
  uint64_t ban_ns = 0;  // with ExceedAction::kBan: how long the ban lasts
};

}  // namespace floodgate
