// SPDX-License-Identifier: MIT
// GCRA parameters from rates and bursts: interval = 1/rate, capacity = burst × interval.
#include "controller/rule_compiler.h"

#include <netinet/in.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "fg_gcra.h"
#include "fg_window.h"
#include "floodgate/common/units.h"

namespace floodgate {
namespace {

constexpr unsigned __int128 kUnitsPerSecond = static_cast<unsigned __int128>(1000000000ULL)
                                              << FG_TIME_SHIFT;

uint64_t ceilDiv(unsigned __int128 a, unsigned __int128 b) {
  return static_cast<uint64_t>((a + b - 1) / b);
}

// Fills one fg_limit; fails when the bucket would take longer than FG_MAX_CAPACITY_NS to
// refill, which the program's wrap-around handling cannot represent.
Status fillLimit(fg_limit& out, uint64_t interval, uint64_t burst, const char* what) {
  unsigned __int128 capacity = static_cast<unsigned __int128>(interval) * burst;
  if (capacity > FG_MAX_CAPACITY_UNITS) {
    return Error::usage(std::string(what) +
                        " burst takes more than an hour to refill at its rate: lower the burst "
                        "or raise the rate");
  }
  out.interval = interval;
  out.capacity = static_cast<uint64_t>(capacity);
  return okStatus();
}

// Raises a token bucket's capacity to one tick of tokens plus `unit` costs when it is less.
void fitToTick(fg_limit& limit, uint64_t tick_units, uint64_t unit) {
  if (!limit.interval || !tick_units) return;
  uint64_t least = tick_units + limit.interval * unit;
  if (limit.capacity < least) limit.capacity = least;
}

// How far from the rate that runs a rate may be shown: 0.1%, a step no operator reads as
// another limit.
constexpr double kShownWithin = 1e-3;

// The roundest rate (fewest significant digits) within kShownWithin of `exact` that compiles
// back to `interval` through `toInterval`, so a rate reads back as it was written: 10 Gbit/s,
// not 9999961853 bit/s. No farther either: 10 Tbit/s compiles to 53 units a byte (52.43
// exactly), which runs at 9.89 Tbit/s, and is shown as 9.9Tbit, not as the 10Tbit written.
template <class ToInterval>
uint64_t roundestRate(double exact, uint64_t interval, ToInterval toInterval) {
  for (int digits = 1; digits <= 19; ++digits) {
    double scale = std::pow(10.0, std::floor(std::log10(exact)) - digits + 1);
    for (double candidate : {std::round(exact / scale) * scale, std::ceil(exact / scale) * scale,
                             std::floor(exact / scale) * scale}) {
      if (candidate >= 1 && std::abs(candidate - exact) <= exact * kShownWithin &&
          toInterval(static_cast<uint64_t>(candidate)) == interval) {
        return static_cast<uint64_t>(candidate);
      }
    }
  }
  return static_cast<uint64_t>(std::llround(exact));
}

// The token bucket's limits of `limit` into `out`.
Status compileBucketLimits(const LimitSpec& limit, uint64_t tick_units, fg_limit* out);
// The window algorithms' limits: what one window admits.
Status compileWindowLimits(const RuleSpec& spec, const LimitSpec& limit, fg_limit* out);
// The new-source cap: a GCRA of `per_s` with a tenth of a second (and a tick) of burst.
void compileNewSources(uint64_t per_s, uint64_t tick_units, fg_limit& out);
Status compileSynCookies(const RuleSpec& spec, uint64_t tick_units, fg_rule& rule);
Status compileReturningSources(const RuleSpec& spec, uint64_t tick_units, fg_rule& rule);
// A cap on sources a second (new or verified) as a rate; 0 when there is none.
uint64_t describeCap(const fg_limit& cap);

}  // namespace

uint64_t defaultBurst(uint64_t pps) { return std::max<uint64_t>(1, pps / 10); }

uint64_t defaultBurstBytes(uint64_t bits_per_s) {
  return std::max<uint64_t>(kMinBurstBytes, bits_per_s / 8 / 10);
}

uint64_t packetInterval(uint64_t pps) { return ceilDiv(kUnitsPerSecond, pps); }

uint64_t byteInterval(uint64_t bits_per_s) { return ceilDiv(kUnitsPerSecond * 8, bits_per_s); }

RateAsRun ppsAsRun(uint64_t pps) {
  if (pps == 0) return {};
  const uint64_t interval = packetInterval(pps);
  const double exact = static_cast<double>(kUnitsPerSecond) / static_cast<double>(interval);
  return {roundestRate(exact, interval, packetInterval), 1 - exact / static_cast<double>(pps)};
}

RateAsRun bpsAsRun(uint64_t bits_per_s) {
  if (bits_per_s == 0) return {};
  const uint64_t interval = byteInterval(bits_per_s);
  const double exact = static_cast<double>(kUnitsPerSecond) * 8 / static_cast<double>(interval);
  return {roundestRate(exact, interval, byteInterval), 1 - exact / static_cast<double>(bits_per_s)};
}

std::optional<std::string> coarseRateNote(uint64_t written, bool bits) {
  const RateAsRun run = bits ? bpsAsRun(written) : ppsAsRun(written);
  if (run.below <= kShownWithin) return std::nullopt;
  const auto format = bits ? formatBitRate : formatCount;
  char percent[16];
  std::snprintf(percent, sizeof percent, "%.2f%%", run.below * 100);
  return format(written) + " runs at " + format(run.shown) + ", " + percent +
         " lower: the program keeps a " + (bits ? "byte" : "packet") +
         "'s time in whole 1/65536 ns, too coarse a step for a rate this high; floodgate "
         "status shows the rate that runs";
}

Result<fg_rule> compileRule(const RuleSpec& spec, uint64_t tick_units) {
  fg_rule rule{};
  const LimitSpec& limit = spec.limit;
  if (spec.id >= FG_MAX_RULE_IDS) return Error::usage("rule id out of range");
  if (limit.pps == 0 && limit.bits_per_s == 0) {
    return Error::usage("rule '" + spec.name + "' sets no limit: give a pps and/or bps rate");
  }
  if (spec.ipv4_prefix < 1 || spec.ipv4_prefix > 32) {
    return Error::usage("ipv4 prefix must be 1 to 32, not " + std::to_string(spec.ipv4_prefix));
  }
  if (spec.ipv6_prefix < 1 || spec.ipv6_prefix > 128) {
    return Error::usage("ipv6 prefix must be 1 to 128, not " + std::to_string(spec.ipv6_prefix));
  }
  if (spec.dst_ports.size() > FG_MAX_PORT_RANGES) {
    return Error::usage("rule '" + spec.name + "' has more than " +
                        std::to_string(FG_MAX_PORT_RANGES) + " port ranges");
  }
  if (spec.name.empty() || spec.name.size() >= FG_RULE_NAME_LEN) {
    return Error::usage("rule name '" + spec.name + "' must be 1 to " +
                        std::to_string(FG_RULE_NAME_LEN - 1) + " characters");
  }
  spec.name.copy(rule.name, sizeof(rule.name) - 1);
  rule.id = spec.id;
  rule.epoch = spec.epoch;
  rule.protocol = static_cast<uint8_t>(spec.protocol);
  rule.key_kind = static_cast<uint8_t>(spec.key);
  rule.ipv4_prefix = spec.ipv4_prefix;
  rule.ipv6_prefix = spec.ipv6_prefix;
  rule.action = static_cast<uint8_t>(spec.action);
  rule.tcp_flags_set = spec.tcp_flags_set;
  rule.tcp_flags_clear = spec.tcp_flags_clear;
  rule.port_ranges = static_cast<uint8_t>(spec.dst_ports.size());
  for (size_t i = 0; i < spec.dst_ports.size(); ++i) {
    if (spec.dst_ports[i].first > spec.dst_ports[i].last) {
      return Error::usage("port range " + std::to_string(spec.dst_ports[i].first) + "-" +
                          std::to_string(spec.dst_ports[i].last) + " is backwards");
    }
    rule.ports[i] = {spec.dst_ports[i].first, spec.dst_ports[i].last};
  }
  rule.algorithm = static_cast<uint8_t>(spec.algorithm);
  rule.has_sources = spec.sources.empty() ? 0 : 1;
  if (spec.action == ExceedAction::kBan) {
    if (spec.ban_ns == 0) return Error::usage("rule '" + spec.name + "' bans with no ban time");
    if (spec.key != KeyKind::kSource) {
      return Error::usage("rule '" + spec.name +
                          "' bans with a global key: a global bucket is everyone's, so the "
                          "source whose packet meets its limit went over nothing of its own; "
                          "ban with key: source");
    }
    if (spec.ban_ns > kMaxBanNs) {
      return Error::usage("rule '" + spec.name + "' bans for longer than 30d");
    }
    // in whole jiffies, rounded up: a ban never ends before its time
    const uint64_t tick_ns = tick_units ? tick_units >> FG_TIME_SHIFT : 4'000'000;
    rule.ban_ticks = (spec.ban_ns + tick_ns - 1) / tick_ns;
  }
  const bool untracked_own = spec.untracked.pps || spec.untracked.bits_per_s;
  if (untracked_own && spec.key != KeyKind::kSource) {
    return Error::usage("rule '" + spec.name +
                        "' has an untracked limit but a global key: untracked goes with key: "
                        "source (a global rule is one bucket already)");
  }
  auto compileLimits = [&](const LimitSpec& from, fg_limit* into) {
    return spec.algorithm == Algorithm::kTokenBucket ? compileBucketLimits(from, tick_units, into)
                                                     : compileWindowLimits(spec, from, into);
  };
  if (Status s = compileLimits(limit, rule.limits); !s) return s.error();
  // A rate untracked leaves out is the rule's own, as without untracked rates at all: an
  // untracked pps alone must not lift the rule's bps off every source without a slot.
  LimitSpec untracked = spec.untracked;
  if (untracked_own && !untracked.pps) {
    untracked.pps = limit.pps;
    untracked.burst = limit.burst;
  }
  if (untracked_own && !untracked.bits_per_s) {
    untracked.bits_per_s = limit.bits_per_s;
    untracked.burst_bytes = limit.burst_bytes;
  }
  if (Status s = compileLimits(untracked_own ? untracked : limit, rule.untracked); !s) {
    return Error::usage("untracked: " + s.error().message);
  }
  if (spec.algorithm != Algorithm::kTokenBucket) {
    rule.window_ms = static_cast<uint32_t>(spec.window_ns / 1000000);
  }
  rule.untracked_own = (spec.untracked.pps ? FG_UNTRACKED_OWN_PPS : 0) |
                       (spec.untracked.bits_per_s ? FG_UNTRACKED_OWN_BPS : 0);
  if (spec.key == KeyKind::kSource) {
    compileNewSources(spec.new_sources_per_s, tick_units, rule.new_sources);
    if (Status s = compileReturningSources(spec, tick_units, rule); !s) return s.error();
  }
  if (Status s = compileSynCookies(spec, tick_units, rule); !s) return s.error();
  return rule;
}

const char* synCookiesName(SynCookies mode) {
  switch (mode) {
    case SynCookies::kOff:
      return "off";
    case SynCookies::kAlways:
      return "always";
    case SynCookies::kAuto:
      return "auto";
  }
  return "?";
}

namespace {
Status compileBucketLimits(const LimitSpec& limit, uint64_t tick_units, fg_limit* out) {
  if (limit.pps) {
    if (limit.burst < 1) return Error::usage("burst must be at least 1 packet");
    if (Status s = fillLimit(out[FG_LIMIT_PPS], packetInterval(limit.pps), limit.burst, "packet");
        !s) {
      return s;
    }
  }
  if (limit.bits_per_s) {
    if (limit.burst_bytes < kMinBurstBytes) {
      return Error::usage("burst bytes must be at least " + std::to_string(kMinBurstBytes) +
                          " (one full-size frame), not " + std::to_string(limit.burst_bytes));
    }
    if (Status s =
            fillLimit(out[FG_LIMIT_BPS], byteInterval(limit.bits_per_s), limit.burst_bytes, "byte");
        !s) {
      return s;
    }
  }
  fitToTick(out[FG_LIMIT_PPS], tick_units, 1);
  fitToTick(out[FG_LIMIT_BPS], tick_units, kMinBurstBytes);
  return okStatus();
}

Status compileWindowLimits(const RuleSpec& spec, const LimitSpec& limit, fg_limit* out) {
  if (spec.window_ns < 1000000 || spec.window_ns % 1000000 != 0 ||
      spec.window_ns > FG_MAX_CAPACITY_NS) {
    return Error::usage("rule '" + spec.name +
                        "': a window must be a whole number of milliseconds from 1ms to 1h");
  }
  // per window: rate × window, rounded down so the window never admits more than the rate;
  // kept wide until checked against what the program's counter holds (over it, the count
  // would run into the window's id and start over: a limit never reached)
  auto perWindow = [&](uint64_t per_second) {
    return static_cast<unsigned __int128>(per_second) * spec.window_ns / 1000000000ULL;
  };
  const std::string algorithm =
      spec.algorithm == Algorithm::kSlidingWindow ? "sliding_window" : "fixed_window";
  if (limit.pps) {
    unsigned __int128 packets = perWindow(limit.pps);
    const uint64_t max =
        spec.algorithm == Algorithm::kSlidingWindow ? FG_SLIDING_COUNT_MAX : FG_FIXED_COUNT_MASK;
    if (packets < 1) {
      return Error::usage("rule '" + spec.name +
                          "' admits no packet per window: raise pps or the window");
    }
    if (packets > max) {
      return Error::usage("rule '" + spec.name + "': " + algorithm + " counts at most " +
                          std::to_string(max) + " packets per window: lower pps or shorten the " +
                          "window");
    }
    out[FG_LIMIT_PPS] = {1, static_cast<uint64_t>(packets)};
  }
  if (limit.bits_per_s) {
    if (spec.algorithm == Algorithm::kSlidingWindow) {
      return Error::usage("rule '" + spec.name +
                          "': sliding_window limits packets only; use token_bucket or fixed_window "
                          "for bps");
    }
    unsigned __int128 bytes = perWindow(limit.bits_per_s / 8);
    if (bytes < kMinBurstBytes) {
      return Error::usage("rule '" + spec.name +
                          "' admits less than one full-size frame per window");
    }
    if (bytes > FG_FIXED_COUNT_MASK) {
      return Error::usage("rule '" + spec.name + "': fixed_window counts at most " +
                          std::to_string(FG_FIXED_COUNT_MASK) +
                          " bytes per window: lower bps or shorten the window");
    }
    out[FG_LIMIT_BPS] = {1, static_cast<uint64_t>(bytes)};
  }
  return okStatus();
}

// The FIN, SYN, RST and ACK bits of a TCP header's flags byte, as RuleSpec::tcp_flags_set
// holds them.
constexpr uint8_t kFin = 0x01;
constexpr uint8_t kSyn = 0x02;
constexpr uint8_t kRst = 0x04;
constexpr uint8_t kAck = 0x10;

// A SYN cookie answers a SYN for its source's slot: the rule must be a source rule that
// a TCP SYN (SYN set, ACK clear) can match. The program matches every SYN to a cookie rule
// as a plain one, so the rule may clear FIN and RST (SYNs with those it holds anyway) but no
// other flag: with ECE cleared it would answer the ECN SYNs its own match leaves out.
Status compileSynCookies(const RuleSpec& spec, uint64_t tick_units, fg_rule& rule) {
  if (spec.syn_cookies == SynCookies::kOff) return okStatus();
  if (spec.key != KeyKind::kSource) {
    return Error::usage("rule '" + spec.name +
                        "': syn_cookies goes with key: source (a cookie verifies one source)");
  }
  if (spec.protocol != Protocol::kTcp || (spec.tcp_flags_set & ~kSyn) ||
      (spec.tcp_flags_clear & ~(kAck | kFin | kRst))) {
    return Error::usage("rule '" + spec.name +
                        "': syn_cookies needs a rule that matches TCP SYNs: protocol: tcp, and "
                        "tcp_flags that set at most syn and clear at most ack, fin and rst, "
                        "such as {syn: set, ack: clear}");
  }
  rule.syn_cookies = static_cast<uint8_t>(spec.syn_cookies);
  compileNewSources(spec.verified_sources_per_s, tick_units, rule.verified_sources);
  return okStatus();
}

Status compileReturningSources(const RuleSpec& spec, uint64_t tick_units, fg_rule& rule) {
  if (spec.remember_ns == 0) return okStatus();
  if (spec.remember_ns > kMaxRememberNs) {
    return Error::usage("rule '" + spec.name +
                        "': remember_for is at most 1d (a source is remembered from its "
                        "latest good packet)");
  }
  // in whole jiffies, rounded up, as a ban's time
  const uint64_t tick_ns = tick_units ? tick_units >> FG_TIME_SHIFT : 4'000'000;
  rule.remember_ticks = static_cast<uint32_t>((spec.remember_ns + tick_ns - 1) / tick_ns);
  compileNewSources(spec.returning_sources_per_s, tick_units, rule.returning_sources);
  if (spec.remember_connected) {
    if (spec.protocol != Protocol::kTcp && spec.protocol != Protocol::kAny) {
      return Error::usage("rule '" + spec.name +
                          "': remember: connected needs TCP (a source proves itself by a TCP "
                          "connection to this host); use remember: seen, or protocol: tcp");
    }
    if ((spec.tcp_flags_set & kSyn) || (spec.tcp_flags_clear & kAck)) {
      return Error::usage("rule '" + spec.name +
                          "': remember: connected needs the segments of a connection (ACK "
                          "set, SYN clear), which a rule of SYNs or of ack: clear never meets; "
                          "put it on the rule for the connection's other packets, or use "
                          "remember: seen");
    }
    rule.remember_connected = 1;
  }
  return okStatus();
}

uint64_t describeCap(const fg_limit& cap) {
  if (!cap.interval) return 0;
  return roundestRate(static_cast<double>(kUnitsPerSecond) / cap.interval, cap.interval,
                      packetInterval);
}

void compileNewSources(uint64_t per_s, uint64_t tick_units, fg_limit& out) {
  out = {};
  if (!per_s) return;
  out.interval = packetInterval(per_s);
  out.capacity = out.interval * std::max<uint64_t>(1, per_s / 10);
  fitToTick(out, tick_units, 1);
}
}  // namespace

fg_rule_index indexRules(const std::vector<fg_rule>& rules) {
  fg_rule_index index{};
  for (size_t i = 0; i < rules.size() && i < FG_MAX_RULES; ++i) {
    const uint32_t bit = 1U << i;
    index.rules[FG_CLASS_ANY] |= bit;
    switch (rules[i].protocol) {
      case IPPROTO_TCP:
        index.rules[FG_CLASS_TCP] |= bit;
        break;
      case IPPROTO_UDP:
        index.rules[FG_CLASS_UDP] |= bit;
        break;
      case IPPROTO_ICMP:
        index.rules[FG_CLASS_ICMP] |= bit;
        break;
      default:  // any protocol
        for (uint32_t c = 0; c < FG_PACKET_CLASSES; ++c) index.rules[c] |= bit;
    }
    if (rules[i].syn_cookies != FG_SYN_COOKIES_OFF) index.syn_cookie_rules |= bit;
    if (rules[i].key_kind == FG_KEY_SOURCE) index.source_rules |= bit;
  }
  return index;
}

LimitSpec describeLimits(const fg_rule& rule) { return describeLimits(rule, rule.limits); }

Result<fg_limit> compileLinkControl(const LinkControlBudget& budget, uint64_t tick_units) {
  fg_limit out{};
  if (!budget.pps) return out;
  if (budget.pps > kMaxLinkControlPps) {
    return Error::usage("link_control pps must be at most " + std::to_string(kMaxLinkControlPps) +
                        ", not " + std::to_string(budget.pps) + " (or unlimited)");
  }
  if (!budget.burst) {
    return Error::usage("link_control burst must be at least 1 (a frame must fit)");
  }
  if (Status s = fillLimit(out, packetInterval(budget.pps), budget.burst, "link_control"); !s) {
    return s.error();
  }
  fitToTick(out, tick_units, 1);
  return out;
}

LinkControlBudget describeLinkControl(const fg_limit& limit) {
  if (!limit.interval) return {0, 0};
  return {describeCap(limit), limit.capacity / limit.interval};
}

uint64_t describeNewSources(const fg_rule& rule) { return describeCap(rule.new_sources); }

uint64_t describeVerifiedSources(const fg_rule& rule) { return describeCap(rule.verified_sources); }

uint64_t describeReturningSources(const fg_rule& rule) {
  return describeCap(rule.returning_sources);
}

LimitSpec describeLimits(const fg_rule& rule, const fg_limit* limits) {
  LimitSpec out;
  const fg_limit& pps = limits[FG_LIMIT_PPS];
  const fg_limit& bps = limits[FG_LIMIT_BPS];
  if (rule.algorithm != FG_ALG_TOKEN_BUCKET && rule.window_ms) {
    // a window's capacity is what it admits; as a rate that is capacity per window
    if (pps.interval) out.pps = pps.capacity * 1000 / rule.window_ms;
    if (bps.interval) out.bits_per_s = bps.capacity * 8 * 1000 / rule.window_ms;
    return out;
  }
  if (pps.interval) {
    out.pps = roundestRate(static_cast<double>(kUnitsPerSecond) / pps.interval, pps.interval,
                           packetInterval);
    out.burst = pps.capacity / pps.interval;
  }
  if (bps.interval) {
    out.bits_per_s = roundestRate(static_cast<double>(kUnitsPerSecond) * 8 / bps.interval,
                                  bps.interval, byteInterval);
    out.burst_bytes = bps.capacity / bps.interval;
  }
  return out;
}

}  // namespace floodgate
